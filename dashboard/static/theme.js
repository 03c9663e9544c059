// Light or dark before the page paints: the reader's choice if made, else the system's.
(function () {
  var chosen = null;
  try { chosen = localStorage.getItem("fastsse-theme"); } catch (e) { /* private mode */ }
  if (chosen === "light" || chosen === "dark") {
    document.documentElement.dataset.theme = chosen;
  }
})();

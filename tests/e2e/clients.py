"""The real clients of the matrix: how each one is run against a base URL, non-interactively,
with a throwaway home, telemetry off and retries capped; and how what it did is graded.

Each client is installed by install.py at its pin.  A run gives an ``Outcome``: exit status,
output, and how much of the mock's answer it printed (the answer's every sentence says where
it stands, "Sentence 4 of 6 ...", so a cut shows in the output whatever the client's format).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .install import BY_NAME, Pin

HERE = Path(__file__).resolve().parent
SENTENCES = 6
KEY = "sk-e2e-not-a-real-key"
# Words by which a client tells its user that the answer broke.
TELLING = re.compile(
    r"error|incomplete|truncat|max.?tokens|length|cut|clos|terminat|"
    r"disconnect|premature|unexpected|reset|interrupt|timeout|timed out|fail|"
    r"retry|retrying|reconnect|stream",
    re.I,
)

GRADES = {
    "L0": "silent: a cut answer, exit 0, nothing said",
    "L1": "a weak or misdirected signal: exit 0, but something printed on the side",
    "L2": "told: exit status or a message says the answer broke",
    "L3": "recovered: retried and printed the whole answer",
}


@dataclass
class Outcome:
    returncode: int | None  # None: killed at the time limit
    stdout: str
    stderr: str
    requests: list[dict] = field(default_factory=list)  # the mock's log entries of the run

    @property
    def sentences_printed(self) -> int:
        found = [int(n) for n in re.findall(rf"Sentence (\d+) of {SENTENCES}\b", self.stdout)]
        return max(found, default=0)

    @property
    def whole(self) -> bool:
        return (
            self.sentences_printed == SENTENCES
            and f"Sentence {SENTENCES} of {SENTENCES} "
            "of the mock provider's answer, which keeps going until it is complete"
            in " ".join(self.stdout.split())
        )

    @property
    def generations(self) -> list[dict]:
        return [r for r in self.requests if r.get("kind") in ("stream", "whole")]

    def grade(self) -> str:
        """For a faulted case.  A whole answer from one request (the fault cost no text, as a
        dropped end marker) is graded like a cut one: the client accepted a broken stream."""
        if self.whole and len(self.generations) > 1:
            return "L3"
        if self.returncode != 0:
            return "L2"
        said = self.stderr + self.stdout.replace(answer_prefix(), "")
        return "L1" if TELLING.search(said) else "L0"

    def printed(self) -> str:
        if self.whole:
            return "whole answer"
        if self.sentences_printed:
            return f"cut answer ({self.sentences_printed}/{SENTENCES} sentences)"
        return "no answer"

    def seen(self, category: str | None) -> str:
        """What the application saw, as the guard page's table says it (tests/guard/test_sdks.py
        says it for the SDKs): the whole answer, the exception it got (with the guard's category
        when the guard's failure was it or its cause), or no exception (the stored category)."""
        if self.returncode == 0:
            if category in (None, "complete"):
                return "whole" if self.whole else "no exception (complete)"
            if self.whole and len(self.generations) > 1:
                return f"whole, retried ({category})"
            return f"no exception ({category})"
        raised = re.findall(r"^ERROR [\w.]*?(\w+): ", self.stderr, re.M)
        told = re.findall(r"^fastsse\.guard: (\w+)$", self.stderr, re.M)
        name = raised[-1] if raised else "exit " + str(self.returncode)
        return f"{name} ← {told[-1]}" if told else name

    def said(self, limit: int = 90) -> str:
        """The client's last line of complaint, for the matrix."""
        lines = [
            line.strip()
            for line in (self.stderr + "\n" + self.stdout).splitlines()
            if line.strip() and TELLING.search(line) and "mock provider's answer" not in line
        ]
        text = lines[-1] if lines else ""
        text = re.sub(r"http://127\.0\.0\.1:\d+", "<tap>", text)
        return (text[:limit] + "…") if len(text) > limit else text


def fault_prefix(client: Client, fault: str) -> str:
    """The mock's path prefix for one case: F0, or the fault's -once form named for the
    client (so that each case's once is its own)."""
    slug = re.sub(r"[^\w-]", "", client.name.replace(" ", "-"))
    return "F0" if fault == "F0" else f"{fault}-once.{slug}"


def proxy_model(client: Client, fault: str) -> str:
    """The LiteLLM proxy's model name for one case: one deployment per client and fault (the
    healthy cases of two clients share the mock's prefix F0, not a model name)."""
    slug = re.sub(r"[^\w-]", "", client.name.replace(" ", "-"))
    return f"mock-{slug}-{fault_prefix(client, fault)}"


def answer_prefix() -> str:
    return "Sentence 1 of"


@dataclass(frozen=True)
class Client:
    name: str  # as the matrix shows it
    pin: Pin
    protocol: str  # the protocol it speaks here
    tool: str  # what the tap tells from its User-Agent
    # Through the tap, which posts what it relays; else straight to the mock, the client
    # posting its verdicts itself (the guard's reporter), or (proxied) through LiteLLM's
    # proxy, which posts them.
    tapped: bool = True
    proxied: bool = False

    @property
    def raises(self) -> frozenset[str]:
        """The categories whose faults the guard raises in this client (none through the tap:
        the tap tells the service, not the client)."""
        if self.tapped:
            return frozenset()
        if isinstance(self, (LitellmLibrary, LitellmProxyClient)):
            from fastsse_service.litellm_guard import RAISE_ON

            return RAISE_ON
        from fastsse.guard import UNSEEN

        return UNSEEN

    def run(self, base: str, home: Path, timeout: float = 90, env: dict | None = None) -> Outcome:
        """Run once against ``base`` (scheme://host:port/PREFIX: the tap, or the mock)."""
        home.mkdir(parents=True, exist_ok=True)
        command, own_env, cwd = self.command(base, home)
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "TERM": "dumb",
            **own_env,
            **(env or {}),
        }
        try:
            done = subprocess.run(
                command,
                cwd=cwd,
                env=full_env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            return Outcome(None, _text(exc.stdout), _text(exc.stderr))
        return Outcome(done.returncode, done.stdout, done.stderr)

    def command(self, base: str, home: Path) -> tuple[list[str], dict, Path]:
        raise NotImplementedError


def _text(raw) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else (raw or "")


# sdk_client.py's app for each SDK and the protocol it speaks.
SDK_APPS = {
    ("openai", "chat"): "openai-chat",
    ("openai", "responses"): "openai-responses",
    ("anthropic", "anthropic"): "anthropic",
    ("google-genai", "gemini"): "gemini",
    ("boto3", "bedrock-converse"): "bedrock-converse",
    ("boto3", "bedrock-invoke"): "bedrock-invoke",
    ("anthropic[bedrock]", "bedrock-invoke"): "anthropic-bedrock",
    ("ollama", "ollama"): "ollama",
}


class SdkApp(Client):
    """sdk_client.py under the SDK's own interpreter."""

    flags: tuple[str, ...] = ()

    def command(self, base, home):
        app = SDK_APPS[self.pin.package, self.protocol]
        url = base + "/v1" if self.pin.package == "openai" else base
        python = str(self.pin.directory / "bin" / "python")
        return ([python, str(HERE / "sdk_client.py"), app, url, *self.flags], {}, home)


@dataclass(frozen=True)
class GuardedSdkApp(SdkApp):
    """sdk_client.py with fastsse.guard in the SDK's HTTP client and its reporter posting to
    the service: straight to the mock, no tap.  fastsse comes from this checkout (the test
    puts it on PYTHONPATH, with the reporter's spool and the service's address)."""

    mode: str = "sync"
    tapped: bool = False

    @property
    def flags(self) -> tuple[str, ...]:
        return ("--guard", "--async") if self.mode == "async" else ("--guard",)


@dataclass(frozen=True)
class LitellmLibrary(Client):
    """litellm_client.py: ``litellm.completion`` (or ``acompletion``) on the mock, with
    fastsse_service.litellm_guard installed, its reporter posting to the service (no tap);
    or, ``tapped``, LiteLLM as it is, through the tap."""

    provider: str = "openai"
    mode: str = "sync"
    tapped: bool = False

    def command(self, base, home):
        flags = [*([] if self.tapped else ["--guard"]), *(["--async"] if self.mode == "async" else [])]
        python = str(self.pin.directory / "bin" / "python")
        env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY_DISABLED": "true"}
        return [python, str(HERE / "litellm_client.py"), "library", base, self.provider, *flags], env, home


@dataclass(frozen=True)
class LitellmProxyClient(Client):
    """A plain openai SDK app (litellm_client.py proxy) asking the LiteLLM proxy, which runs
    with fastsse_service.litellm_guard installed by its worker start-up hook (the test's
    ``litellm_proxy``: a model per fault, each on the mock under that fault's prefix)."""

    provider: str = "openai"
    tapped: bool = False
    proxied: bool = True

    def command(self, base, home):
        proxy_url, model = base.rsplit("#", 1)  # the test passes PROXY_URL#MODEL
        python = str(self.pin.directory / "bin" / "python")
        return [python, str(HERE / "litellm_client.py"), "proxy", proxy_url, model], {}, home


PROMPT = "Say hello."
# Each CLI's retries, capped so that a case takes seconds (1 retry: recovery still shows).
RETRIES = 1


class Codex(Client):
    """``codex exec`` on a provider of our own (Responses API), from a throwaway CODEX_HOME."""

    def command(self, base, home):
        codex_home, work = home / ".codex", home / "work"
        codex_home.mkdir(exist_ok=True)
        work.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(f"""\
model = "gpt-5-mini"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false  # else it syncs plugins from api.github.com and chatgpt.com

[model_providers.mock]
name = "mock"
base_url = "{base}/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = {RETRIES}
stream_max_retries = {RETRIES}
stream_idle_timeout_ms = 5000
""")
        binary = self.pin.directory / "node_modules" / ".bin" / "codex"
        return (
            [str(binary), "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never", PROMPT],
            {"CODEX_HOME": str(codex_home), "MOCK_API_KEY": KEY, "RUST_LOG": "error"},
            work,
        )


class ClaudeCode(Client):
    """``claude -p`` (Messages API), configured by its environment alone."""

    MODEL = "claude-sonnet-4-5-20250929"

    def command(self, base, home):
        work = home / "work"
        work.mkdir(exist_ok=True)
        env = {
            "ANTHROPIC_BASE_URL": base,
            "ANTHROPIC_API_KEY": KEY,
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_MODEL": self.MODEL,
            "ANTHROPIC_SMALL_FAST_MODEL": self.MODEL,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": self.MODEL,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_UPDATES": "1",
            "DISABLE_BUG_COMMAND": "1",
            "DISABLE_FEEDBACK_COMMAND": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(RETRIES),
            "API_TIMEOUT_MS": "15000",
        }
        binary = self.pin.directory / "node_modules" / ".bin" / "claude"
        return [str(binary), "-p", PROMPT], env, work


class KimiCli(Client):
    """kimi-cli's original CLI in print mode (Chat Completions), reached through
    ``run_original_cli``: its ``kimi`` entry point is a deprecation gate that, run bare,
    downloads and runs an installer, so it is never called."""

    def command(self, base, home):
        share, work = home / ".kimi", home / "work"
        share.mkdir(exist_ok=True)
        work.mkdir(exist_ok=True)
        config = share / "config.toml"
        config.write_text(f"""\
default_model = "mock"
telemetry = false

[providers.mock]
type = "openai_legacy"
base_url = "{base}/v1"
api_key = "{KEY}"

[models.mock]
provider = "mock"
model = "gpt-4o-2024-08-06"
max_context_size = 128000

[loop_control]
max_retries_per_step = {RETRIES}
max_steps_per_turn = 3
""")
        launcher = (
            "import sys; from kimi_cli.__main__ import run_original_cli; sys.exit(run_original_cli(sys.argv[1:]))"
        )
        return (
            [
                str(self.pin.directory / "bin" / "python"),
                "-c",
                launcher,
                "--print",
                "--output-format",
                "text",
                "--final-message-only",
                "--work-dir",
                str(work),
                "--config-file",
                str(config),
                "--prompt",
                PROMPT,
            ],
            {"KIMI_SHARE_DIR": str(share), "KIMI_DISABLE_TELEMETRY": "1"},
            work,
        )


CLIENTS = (
    Codex("codex", BY_NAME["codex"], "responses", "codex"),
    ClaudeCode("claude-code", BY_NAME["claude-code"], "anthropic", "claude-code"),
    # kimi-cli sends only its SDK's User-Agent (AsyncOpenAI/Python); a deployment that wants
    # it named sets TAP_TOOL (the matrix's tap does not, to show what the tap tells alone).
    KimiCli("kimi-cli", BY_NAME["kimi-cli"], "chat", "openai-python"),
    SdkApp("openai-python (chat)", BY_NAME["openai-python"], "chat", "openai-python"),
    SdkApp("openai-python (responses)", BY_NAME["openai-python"], "responses", "openai-python"),
    SdkApp("anthropic-python", BY_NAME["anthropic-python"], "anthropic", "anthropic-python"),
    SdkApp("google-genai", BY_NAME["google-genai"], "gemini", "google-genai"),
    SdkApp("boto3 (converse_stream)", BY_NAME["boto3"], "bedrock-converse", "boto3"),
    SdkApp("boto3 (invoke_model_with_response_stream)", BY_NAME["boto3"], "bedrock-invoke", "boto3"),
    SdkApp("anthropic-python (Bedrock)", BY_NAME["anthropic-bedrock"], "bedrock-invoke", "anthropic-python"),
    SdkApp("ollama-python", BY_NAME["ollama-python"], "ollama", "ollama-python"),
    *(
        GuardedSdkApp(f"{name} + guard{'' if mode == 'sync' else ' (async)'}", BY_NAME[pin], protocol, tool, mode=mode)
        for name, pin, protocol, tool in (
            ("openai-python (chat)", "openai-python", "chat", "openai-python"),
            ("openai-python (responses)", "openai-python", "responses", "openai-python"),
            ("anthropic-python", "anthropic-python", "anthropic", "anthropic-python"),
            ("google-genai", "google-genai", "gemini", "google-genai"),
            ("anthropic-python (Bedrock)", "anthropic-bedrock", "bedrock-invoke", "anthropic-python"),
            ("ollama-python", "ollama-python", "ollama", "ollama-python"),
        )
        for mode in ("sync", "async")
    ),
    # LiteLLM sends its openai SDK's User-Agent upstream (OpenAI/Python); with the guard, the
    # reporter names it.
    LitellmLibrary("litellm (library, openai/)", BY_NAME["litellm"], "chat", "openai-python", tapped=True),
    LitellmLibrary(
        "litellm (library, gemini/)", BY_NAME["litellm"], "gemini", "litellm", provider="gemini", tapped=True
    ),
    LitellmLibrary("litellm (library, openai/) + guard", BY_NAME["litellm"], "chat", "litellm"),
    LitellmLibrary("litellm (library, openai/) + guard (async)", BY_NAME["litellm"], "chat", "litellm", mode="async"),
    LitellmLibrary("litellm (library, gemini/) + guard", BY_NAME["litellm"], "gemini", "litellm", provider="gemini"),
    LitellmProxyClient("litellm proxy (openai/) + guard", BY_NAME["litellm"], "chat", "litellm"),
    # LiteLLM's own handlers: Anthropic's Messages (which it stops reading at message_delta)
    # and Bedrock's ConverseStream.
    LitellmLibrary(
        "litellm (library, anthropic/) + guard", BY_NAME["litellm"], "anthropic", "litellm", provider="anthropic"
    ),
    LitellmLibrary(
        "litellm (library, anthropic/) + guard (async)",
        BY_NAME["litellm"],
        "anthropic",
        "litellm",
        provider="anthropic",
        mode="async",
    ),
    LitellmLibrary(
        "litellm (library, bedrock/) + guard", BY_NAME["litellm"], "bedrock-converse", "litellm", provider="bedrock"
    ),
    LitellmProxyClient(
        "litellm proxy (anthropic/) + guard", BY_NAME["litellm"], "anthropic", "litellm", provider="anthropic"
    ),
)

-- wrk script: every connection posts the given stream files to POST /v1/streams in turn, each
-- post with a new stream_id.  Run through loadtests/wrk.py, which passes, after `--`:
--   tag  pace_ms  count_statuses(0|1)  batch  token  body_file...
-- A batch of N > 0 posts the streams N at a time to POST /v1/streams/batch instead, each with a
-- stream_id of its own (a head line and its bytes, as service/batches.py reads them).  A batch
-- of "files:T" (T: wrk's threads) says the body files are whole batches, made beforehand (a
-- compressed one cannot be made here): each is posted once, thread i taking files i, i + T, ...
-- With a pace, each connection waits that long before each request.  Counting the answers by
-- status (and the 503s without Retry-After) costs wrk a Lua call per answer, so it is asked
-- for only where the answers matter (the overload run), not where wrk's own cost does (the
-- benchmarks).  A token of "forged-signature" sends, instead of a bearer token, signing headers
-- a client without any secret made up (a new webhook-id each post; bench/bench_signed_flood.py).
-- A body file whose name ends in .zst or .gz is posted with Content-Encoding zstd or gzip.
-- The summary is one line: RESULT {json}.
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  prefix = args[1] .. "-" .. tid .. "-"
  pace = tonumber(args[2])
  if args[3] ~= "1" then response = nil end  -- wrk then parses no answer for us
  prepared = args[4]:sub(1, 6) == "files:"
  stride = prepared and tonumber(args[4]:sub(7)) or 1
  batch = prepared and 0 or tonumber(args[4])
  forged = args[5] == "forged-signature"
  if forged then
    headers = {
      ["Content-Type"] = "text/event-stream",
      ["content-digest"] = "sha-256=:" .. string.rep("A", 43) .. "=:",
      ["webhook-signature"] = "fastsse2," .. string.rep("B", 43) .. "=",
    }
  else
    headers = {["Authorization"] = "Bearer " .. args[5], ["Content-Type"] = "text/event-stream"}
  end
  bodies = {}
  encodings = {}
  for i = 6, #args do
    local f = assert(io.open(args[i], "rb"))
    bodies[#bodies + 1] = f:read("*a")
    f:close()
    if args[i]:sub(-4) == ".zst" then
      encodings[#bodies] = "zstd"
    elseif args[i]:sub(-3) == ".gz" then
      encodings[#bodies] = "gzip"
    end
  end
  counter = 0
  statuses = {}
  no_retry_after = 0
end

function delay()
  return pace
end

function batch_request()
  local parts = {}
  for i = 1, batch do
    counter = counter + 1
    local body = bodies[(counter % #bodies) + 1]
    parts[#parts + 1] = '{"stream_id":"' .. prefix .. counter .. '","tool":"codex","length":' .. #body .. '}\n'
    parts[#parts + 1] = body
  end
  return wrk.format("POST", "/v1/streams/batch", headers, table.concat(parts))
end

function prepared_request()
  local index = (counter * stride + tid - 1) % #bodies + 1
  counter = counter + 1
  headers["Content-Encoding"] = encodings[index]
  return wrk.format("POST", "/v1/streams/batch", headers, bodies[index])
end

function request()
  if prepared then return prepared_request() end
  if batch > 0 then return batch_request() end
  counter = counter + 1
  local index = (counter % #bodies) + 1
  local body = bodies[index]
  headers["Content-Encoding"] = encodings[index]
  if forged then
    headers["webhook-id"] = "msg_" .. prefix .. counter
    headers["webhook-timestamp"] = tostring(os.time())
  end
  return wrk.format("POST", "/v1/streams?stream_id=" .. prefix .. counter .. "&tool=codex", headers, body)
end

function response(status, headers, body)
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
  if (status == 503 or status == 429) and headers["retry-after"] == nil and headers["Retry-After"] == nil then
    no_retry_after = no_retry_after + 1
  end
end

function done(summary, latency, requests)
  local total, missing = {}, 0
  for _, thread in ipairs(threads) do
    for key, n in pairs(thread:get("statuses")) do total[key] = (total[key] or 0) + n end
    missing = missing + thread:get("no_retry_after")
  end
  local parts = {}
  for key, n in pairs(total) do parts[#parts + 1] = string.format('"%s": %d', key, n) end
  io.write(string.format(
    'RESULT {"requests": %d, "seconds": %.6f, "statuses": {%s}, "no_retry_after": %d, ' ..
    '"non_2xx": %d, "socket_errors": %d, "timeouts": %d, "p50_ms": %.3f, "p99_ms": %.3f, "max_ms": %.3f}\n',
    summary.requests, summary.duration / 1e6, table.concat(parts, ", "), missing, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write, summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end

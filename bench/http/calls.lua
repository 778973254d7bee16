-- wrk script: POST one read tool call per request to /v1/calls, rotating over the bearer tokens
-- in $TOKENS_FILE (one per line) so that no principal passes its default rate limit (50/s). Each
-- token's subject calls in a run of its own (runs are bound to their first caller's subject), and
-- only answers whose verdict is `ok` count as served calls (`done` prints them).
local tokens, bodies = {}, {}
for line in io.lines(os.getenv("TOKENS_FILE")) do
  tokens[#tokens + 1] = line
  bodies[#bodies + 1] = '{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}, "run_id": "bench-'
    .. #tokens .. '"}'
end
local i = 0
local threads = {}

setup = function(thread)
  table.insert(threads, thread)
end

init = function()
  ok, other = 0, 0
end

request = function()
  i = i + 1
  local n = (i % #tokens) + 1
  local headers = {}
  headers["Authorization"] = "Bearer " .. tokens[n]
  headers["Content-Type"] = "application/json"
  return wrk.format("POST", "/v1/calls", headers, bodies[n])
end

response = function(status, headers, body)
  if status == 200 and string.find(body, '"status":"ok"', 1, true) then
    ok = ok + 1
  else
    other = other + 1
  end
end

done = function(summary, latency, requests)
  local served, refused = 0, 0
  for _, thread in ipairs(threads) do
    served = served + thread:get("ok")
    refused = refused + thread:get("other")
  end
  local seconds = summary.duration / 1e6
  io.write(string.format("ok verdicts: %d (%.1f/s); other answers: %d\n", served, served / seconds, refused))
end

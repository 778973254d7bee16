-- wrk script: POST one read tool call per request to /v1/calls, rotating over the bearer tokens
-- in $TOKENS_FILE (one per line) so that no principal passes its default rate limit (50/s).
local tokens = {}
for line in io.lines(os.getenv("TOKENS_FILE")) do
  tokens[#tokens + 1] = line
end
local body = '{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}, "run_id": "bench"}'
local i = 0

request = function()
  i = i + 1
  local headers = {}
  headers["Authorization"] = "Bearer " .. tokens[(i % #tokens) + 1]
  headers["Content-Type"] = "application/json"
  return wrk.format("POST", "/v1/calls", headers, body)
end

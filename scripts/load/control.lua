-- wrk script: the control plane of `vouch serve`, alternating POST /api-gateway/sessions/start
-- and GET /api-consent/status with the project key in VOUCH_TOKEN (scripts/load-serve).
local token = os.getenv("VOUCH_TOKEN")
local n = 0

request = function()
  n = n + 1
  local headers = { ["Authorization"] = "Bearer " .. token }
  if n % 2 == 0 then
    return wrk.format("POST", "/api-gateway/sessions/start", headers, "")
  end
  return wrk.format("GET", "/api-consent/status?user_fullname=load-user", headers)
end

done = function(summary, latency, requests)
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f rps=%.0f p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f non2xx=%d socket_errors=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end

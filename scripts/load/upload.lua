-- wrk script: POST /api-gateway/process-video with the file in VOUCH_CLIP as the `video` part,
-- the phrase, the project key in VOUCH_TOKEN and X-User-Fullname (scripts/load-serve).
local token = os.getenv("VOUCH_TOKEN")
local file = assert(io.open(os.getenv("VOUCH_CLIP"), "rb"))
local clip = file:read("*a")
file:close()
local boundary = "vouch-load-7d1e5c"
local body = "--" .. boundary .. "\r\n"
  .. "Content-Disposition: form-data; name=\"video\"; filename=\"clip.mp4\"\r\n"
  .. "Content-Type: video/mp4\r\n\r\n" .. clip .. "\r\n"
  .. "--" .. boundary .. "\r\n"
  .. "Content-Disposition: form-data; name=\"phrase\"\r\n\r\n"
  .. "please verify me now\r\n"
  .. "--" .. boundary .. "--\r\n"

wrk.method = "POST"
wrk.path = "/api-gateway/process-video"
wrk.body = body
wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["X-User-Fullname"] = "load-user"
wrk.headers["Content-Type"] = "multipart/form-data; boundary=" .. boundary

done = function(summary, latency, requests)
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f rps=%.2f p50_ms=%.0f p95_ms=%.0f p99_ms=%.0f max_ms=%.0f non2xx=%d socket_errors=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end

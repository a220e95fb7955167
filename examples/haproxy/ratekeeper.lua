-- ratekeeper.lua — an HAProxy (>= 2.6) action that asks ratekeeper's GET /v1/auth before a request goes on, with
-- HAProxy's own HTTP client (core.httpclient): no library, no socket code.
--
--   http-request lua.ratekeeper <url of /v1/auth> <policy>        (the key: var(txn.rk_key), else the client address)
--
-- It sets txn.rk_verdict to what the configuration acts on:
--   allow — ratekeeper answered 200; txn.rk_limit and txn.rk_policy hold its RateLimit and RateLimit-Policy
--   deny  — ratekeeper answered 403 (refused); the same fields, and txn.rk_retry its Retry-After (seconds)
--   down  — anything else: no answer, a 400 for a missing key, a 500. HAProxy's httpclient reports a connection it
--           could not make as a 503 of its own, after about 3 s whatever the timeout: so only 200 and 403 are read
--           as ratekeeper's word, and everything else is `down` (haproxy.cfg answers 503: fail closed).
-- The check is a new request built here, from the policy and the key alone: none of the client's headers (its own
-- X-Ratekeeper-Cost: 0, say) reach it.

-- first — a response header's value (HAProxy gives each header's values as a table indexed from 0), or nil.
local function first(headers, name)
  local values = headers and headers[name]
  if values == nil then return nil end
  return values[0] or values[1]
end

core.register_action("ratekeeper", { "http-req" }, function(txn, url, policy)
  local key = txn:get_var("txn.rk_key") or txn.f:src()
  local res = core.httpclient():get({
    url = url,
    headers = { ["X-Ratekeeper-Policy"] = { policy }, ["X-Ratekeeper-Key"] = { key } },
    timeout = 1000, -- ms
  })
  local status = res and res.status
  if status ~= 200 and status ~= 403 then
    txn:set_var("txn.rk_verdict", "down")
    txn:set_var("txn.rk_status", tostring(status))
    return
  end
  txn:set_var("txn.rk_verdict", status == 200 and "allow" or "deny")
  txn:set_var("txn.rk_limit", first(res.headers, "ratelimit") or "")
  txn:set_var("txn.rk_policy", first(res.headers, "ratelimit-policy") or "")
  txn:set_var("txn.rk_retry", first(res.headers, "retry-after") or "")
end, 2)

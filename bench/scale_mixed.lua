-- wrk script of bench/scale_bench.py's `mixed` load: 80 % GET one template, 20 % POST a new template
-- (a write, a policy decision, a unique id per thread and request). The -H headers (Authorization) are kept.
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local n = 0

function request()
  n = n + 1
  if n % 5 == 0 then
    local headers = {}
    for k, v in pairs(wrk.headers) do headers[k] = v end
    headers["Content-Type"] = "application/json"
    local body = string.format('{"template_id":"t-%d-%d","image_id":"ami-1"}', tid, n)
    return wrk.format("POST", "/api/v1/templates", headers, body)
  end
  return wrk.format("GET", "/api/v1/templates/web")
end

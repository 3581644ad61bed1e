-- Fair dispatch (``tenants.dispatch``): tenants' parked job messages released to the broker's
-- priority lists round-robin, one per tenant per round, while the tenant has fewer than its cap
-- released and unfinished. ARGV[1] = key prefix, ARGV[2] = now, ARGV[3] = the fleet's cap per
-- tenant, ARGV[4] = most messages released by this call, ARGV[5..] = the priority queues, highest
-- first. A parked entry is ``job id|message``; one whose job ended (cancelled while parked) or
-- expired is dropped. Returns the number released.
local prefix, now, fleet_cap, most = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local FINAL = {${FINAL_STATES}}
local queues = {}
for i = 5, #ARGV do queues[#queues + 1] = ARGV[i] end
local pending, turn_key = prefix .. 'tenants:pending', prefix .. 'tenants:turn'

local function cap_of(tenant)  -- min(the tenant's max_running, the fleet's cap)
  local raw = redis.call('HGET', prefix .. 'tenants', tenant)
  if raw then
    local ok, rec = pcall(cjson.decode, raw)
    if ok and type(rec) == 'table' and type(rec['limits']) == 'table' then
      local most_running = rec['limits']['max_running']
      if type(most_running) == 'number' and most_running < fleet_cap then return most_running end
    end
  end
  return fleet_cap
end

local function next_live(tkey)  -- the tenant's oldest parked message of a live job, highest priority first
  for _, queue in ipairs(queues) do
    while true do
      local entry = redis.call('RPOP', tkey .. ':pending:' .. queue)
      if not entry then break end
      local sep = string.find(entry, '|', 1, true)
      local job = string.sub(entry, 1, sep - 1)
      local state = redis.call('HGET', prefix .. 'job:' .. job, 'state')
      if state and not FINAL[state] then return job, queue, string.sub(entry, sep + 1) end
    end
  end
  return nil
end

local released = 0
while released < most do
  local tenants = redis.call('SMEMBERS', pending)
  if #tenants == 0 then break end
  table.sort(tenants)
  local last = redis.call('GET', turn_key) or ''
  local order = {}
  for _, t in ipairs(tenants) do if t > last then order[#order + 1] = t end end
  for _, t in ipairs(tenants) do if t <= last then order[#order + 1] = t end end
  local moved = false
  for _, tenant in ipairs(order) do
    if released >= most then break end
    local tkey = prefix .. 'tenant:' .. tenant
    if redis.call('ZCARD', tkey .. ':inflight') < cap_of(tenant) then
      local job, queue, message = next_live(tkey)
      if job then
        redis.call('LPUSH', queue, message)
        redis.call('ZADD', tkey .. ':inflight', now, job)
        redis.call('SET', turn_key, tenant)
        released = released + 1
        moved = true
      else
        redis.call('SREM', pending, tenant)
      end
    end
  end
  if not moved then break end
end
return released

-- What every job script starts with (``store.scripts`` puts this before the script's own text).
-- ARGV[1] = key prefix, ARGV[2] = job id, ARGV[3] = now (epoch seconds, from the caller's clock);
-- key names are built the way ``store/keys.py`` documents, hash fields as ``store/codec.py`` does.
-- The values of EVENTS_MAX and FINAL below are filled in from Python (``store.scripts.EVENTS_MAX``,
-- ``model.status.FINAL_STATES``), so each has one definition.
local prefix, id, now = ARGV[1], ARGV[2], ARGV[3]
local jkey = prefix .. 'job:' .. id
local ekey = jkey .. ':events'
local EVENTS_MAX = ${EVENTS_MAX}
local FINAL = {${FINAL_STATES}}

local function is_final(state)
  return FINAL[state] == true
end

local function add_event(kind, data)
  return redis.call('XADD', ekey, 'MAXLEN', '~', EVENTS_MAX, '*', 'type', kind, 'data', cjson.encode(data))
end

-- Move the job between state indexes (and batch counters), record it, and log a state event.
local function set_state(old, new, data)
  local seq = redis.call('HGET', jkey, 'seq')
  redis.call('HSET', jkey, 'state', new, 'updated_at', now)
  if old then redis.call('ZREM', prefix .. 'jobs:state:' .. old, id) end
  redis.call('ZADD', prefix .. 'jobs:state:' .. new, seq, id)
  local tenant = redis.call('HGET', jkey, 'tenant')
  if tenant and tenant ~= '' then  -- the tenant's live jobs by state (quotas), and its released ones (dispatch)
    local tkey = prefix .. 'tenant:' .. tenant
    if old and not is_final(old) then redis.call('HINCRBY', tkey .. ':usage', old, -1) end
    if is_final(new) then redis.call('ZREM', tkey .. ':inflight', id)
    else redis.call('HINCRBY', tkey .. ':usage', new, 1) end
    if not old then  -- recorded under an open admission: its reservation stops counting it (tenant_admit.lua)
      local admission = redis.call('HGET', jkey, 'admission')
      if admission and admission ~= '' and redis.call('HEXISTS', tkey .. ':admitted', admission) == 1 then
        redis.call('HINCRBY', tkey .. ':admitted', admission, 1)
      end
    end
  end
  local batch = redis.call('HGET', jkey, 'batch')
  if batch then
    local bkey = prefix .. 'batch:' .. batch
    if old then redis.call('HINCRBY', bkey, old, -1) end
    redis.call('HINCRBY', bkey, new, 1)
  end
  data = data or {}
  data['state'] = new
  data['at'] = tonumber(now)
  return add_event('state', data)
end

-- The latest run of a job that keeps its session (``run:{n}``, see ``codec``) ends as ``state``
-- when something other than its worker ended it (a lost worker).
local function end_run(state, category, err)
  local n = redis.call('HGET', jkey, 'runs')
  if not n then return end
  local raw = redis.call('HGET', jkey, 'run:' .. n)
  if not raw then return end
  local rec = cjson.decode(raw)
  if rec['state'] ~= 'running' then return end
  rec['state'], rec['category'], rec['error'], rec['finished_at'] = state, category, err, tonumber(now)
  redis.call('HSET', jkey, 'run:' .. n, cjson.encode(rec))
end

-- The ``jobs:expiring`` member naming the index entries of this job: ``job {id} {state}
-- [schedule={id} ]{labels JSON}`` (a schedule's job is also in its ``jobs:schedule:{id}`` index).
local function expiring_member(state, labels, schedule)
  local sched = (schedule and schedule ~= '') and ('schedule=' .. schedule .. ' ') or ''
  return 'job ' .. id .. ' ' .. (state or '') .. ' ' .. sched .. (labels or '{}')
end

-- A finished record and its stream live result_ttl more seconds, then vanish; ``jobs:expiring``
-- remembers which index entries to drop then (``reconcile`` trims them).
local function expire_finished(ttl)
  redis.call('EXPIRE', jkey, ttl)
  redis.call('EXPIRE', ekey, ttl)
  local f = redis.call('HMGET', jkey, 'idempotency_key', 'state', 'labels', 'schedule')
  if f[1] and f[1] ~= '' then redis.call('EXPIRE', prefix .. 'idem:' .. f[1], ttl) end
  redis.call('ZADD', prefix .. 'jobs:expiring', tonumber(now) + tonumber(ttl), expiring_member(f[2], f[3], f[4]))
end

-- Record a notification owed (a webhook), to be sent by whoever runs the outbox (``webhooks.outbox``).
local function owe(delivery, url, event, kind, ref)
  redis.call('HSET', prefix .. 'outbox', delivery, cjson.encode({url = url, event = event, kind = kind, ref = ref}))
  redis.call('ZADD', prefix .. 'outbox:due', now, delivery)
end

-- Mark the batch completed once every job finished, exactly once (once more after a resume reopened it);
-- owe its webhook. 1 if it did.
local function complete_batch(batch, ttl)
  local bkey = prefix .. 'batch:' .. batch
  local h = redis.call('HMGET', bkey, 'total', 'succeeded', 'failed', 'cancelled', 'finished_at', 'webhook_url')
  if not h[1] or h[5] then return 0 end
  local done = (tonumber(h[2]) or 0) + (tonumber(h[3]) or 0) + (tonumber(h[4]) or 0)
  if done < tonumber(h[1]) then return 0 end
  redis.call('HSET', bkey, 'finished_at', now)
  redis.call('EXPIRE', bkey, ttl)
  redis.call('EXPIRE', bkey .. ':jobs', ttl)
  redis.call('ZADD', prefix .. 'jobs:expiring', tonumber(now) + tonumber(ttl), 'batch ' .. batch)
  local crawl = redis.call('HGET', bkey, 'crawl')
  if crawl and crawl ~= '' then  -- a crawl's record and frontier go with its batch's results
    for _, part in ipairs({'', ':seen', ':pages', ':frontier', ':patterns', ':traps', ':refused'}) do redis.call('EXPIRE', prefix .. 'crawl:' .. crawl .. part, ttl) end
  end
  -- a batch reopened (a resumed crawl) finishes again: that finish's webhook has a delivery id of its own
  local finish = redis.call('HINCRBY', bkey, 'finishes', 1)
  local delivery = 'batch.finished:' .. batch .. (finish > 1 and (':finish' .. finish) or '')
  if h[6] and h[6] ~= '' then owe(delivery, h[6], 'batch.finished', 'batch', batch) end
  return 1
end

-- Everything a job's final transition owes, in the same atomic step as the transition: the
-- record's expiry, its webhook, and its batch's completion (with the batch's webhook).
local function finalize(ttl)
  expire_finished(ttl)
  local f = redis.call('HMGET', jkey, 'webhook_url', 'batch', 'spec')
  local url = f[1]
  if not url and f[3] then  -- a record written before webhook_url had its own field
    local ok, spec = pcall(cjson.decode, f[3])
    if ok and type(spec) == 'table' and type(spec['webhook_url']) == 'string' then url = spec['webhook_url'] end
  end
  if url and url ~= '' then
    local runs = tonumber(redis.call('HGET', jkey, 'runs') or '1')
    local delivery = 'job.finished:' .. id
    if runs > 1 then delivery = delivery .. ':run' .. runs end  -- each follow-up run reports its own result
    owe(delivery, url, 'job.finished', 'job', id)
  end
  if f[2] and f[2] ~= '' then complete_batch(f[2], ttl) end
end

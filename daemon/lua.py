"""The job state machine as Redis Lua scripts: each transition is one atomic step on the server.

queued -> running -> succeeded | failed | cancelled, and running -> retrying -> running when a
delivery finds the job's previous run dead. Because a script runs alone on the server, two workers
can never both move a job to running, and a run can only finish a job while it still owns it: the
``attempts`` value it was given at start is its fencing token.

Every script takes ``ARGV[1]`` = key prefix, ``ARGV[2]`` = job id, ``ARGV[3]`` = now (epoch
seconds, from the caller's clock) and builds key names the way ``daemon.keys`` documents.
"""

from __future__ import annotations

PRELUDE = r"""
local prefix, id, now = ARGV[1], ARGV[2], ARGV[3]
local jkey = prefix .. 'job:' .. id
local ekey = jkey .. ':events'
local EVENTS_MAX = 10000

local function is_final(state)
  return state == 'succeeded' or state == 'failed' or state == 'cancelled'
end

local function add_event(kind, data)
  redis.call('XADD', ekey, 'MAXLEN', '~', EVENTS_MAX, '*', 'type', kind, 'data', cjson.encode(data))
end

-- Move the job between state indexes (and batch counters), record it, and log a state event.
local function set_state(old, new, data)
  local seq = redis.call('HGET', jkey, 'seq')
  redis.call('HSET', jkey, 'state', new, 'updated_at', now)
  if old then redis.call('ZREM', prefix .. 'jobs:state:' .. old, id) end
  redis.call('ZADD', prefix .. 'jobs:state:' .. new, seq, id)
  local batch = redis.call('HGET', jkey, 'batch')
  if batch then
    local bkey = prefix .. 'batch:' .. batch
    if old then redis.call('HINCRBY', bkey, old, -1) end
    redis.call('HINCRBY', bkey, new, 1)
  end
  data = data or {}
  data['state'] = new
  data['at'] = tonumber(now)
  add_event('state', data)
end

-- A finished record and its stream live result_ttl more seconds, then vanish.
local function expire_finished(ttl)
  redis.call('EXPIRE', jkey, ttl)
  redis.call('EXPIRE', ekey, ttl)
  local idem = redis.call('HGET', jkey, 'idempotency_key')
  if idem and idem ~= '' then redis.call('EXPIRE', prefix .. 'idem:' .. idem, ttl) end
end
"""

# ARGV[4] = flat field/value JSON array, ARGV[5] = idempotency key or '', ARGV[6] = ttl,
# ARGV[7..] = label index keys. Returns {job id, 1 if created else 0}.
CREATE = PRELUDE + r"""
local idem, ttl = ARGV[5], ARGV[6]
if idem ~= '' then
  local ikey = prefix .. 'idem:' .. idem
  local existing = redis.call('GET', ikey)
  if existing and redis.call('EXISTS', prefix .. 'job:' .. existing) == 1 then
    return {existing, 0}
  end
  redis.call('SET', ikey, id, 'EX', ttl)
end
local seq = redis.call('INCR', prefix .. 'jobs:seq')
local fields = cjson.decode(ARGV[4])
redis.call('HSET', jkey, 'id', id, 'seq', seq, 'created_at', now, 'attempts', 0, unpack(fields))
redis.call('ZADD', prefix .. 'jobs:all', seq, id)
for i = 7, #ARGV do redis.call('ZADD', ARGV[i], seq, id) end
set_state(nil, 'queued', {})
return {id, 1}
"""

# ARGV[4] = worker id, ARGV[5] = max attempts, ARGV[6] = seconds without heartbeat after which a
# running job counts as abandoned, ARGV[7] = ttl. Returns {outcome, attempts}; outcome is one of
# run | missing | finished | busy | cancelled | lost.
START = PRELUDE + r"""
local worker, max_attempts, stale_after, ttl = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
if redis.call('EXISTS', jkey) == 0 then return {'missing', 0} end
local state = redis.call('HGET', jkey, 'state')
local attempts = tonumber(redis.call('HGET', jkey, 'attempts') or '0')
if is_final(state) then return {'finished', attempts} end
if state == 'running' then
  local beat = tonumber(redis.call('HGET', jkey, 'heartbeat_at') or '0')
  if tonumber(now) - beat < stale_after then return {'busy', attempts} end
end
if redis.call('HGET', jkey, 'cancel_requested') == '1' then
  redis.call('HSET', jkey, 'finished_at', now)
  set_state(state, 'cancelled', {})
  expire_finished(ttl)
  return {'cancelled', attempts}
end
if state == 'running' then
  set_state('running', 'retrying', {reason = 'the worker running attempt ' .. attempts .. ' was lost'})
  state = 'retrying'
end
if attempts >= max_attempts then
  redis.call('HSET', jkey, 'finished_at', now, 'category', 'worker_lost',
    'error', 'the job\'s worker was lost ' .. attempts .. ' time(s); giving up after ' .. max_attempts .. ' attempt(s)')
  set_state(state, 'failed', {category = 'worker_lost'})
  expire_finished(ttl)
  return {'lost', attempts}
end
attempts = redis.call('HINCRBY', jkey, 'attempts', 1)
redis.call('HSET', jkey, 'worker', worker, 'started_at', now, 'heartbeat_at', now, 'step', 0)
set_state(state, 'running', {attempt = attempts, worker = worker})
return {'run', attempts}
"""

# ARGV[4] = attempt (fencing token), ARGV[5] = step number or '', ARGV[6] = step JSON or '',
# ARGV[7] = first-command time or ''. Heartbeat, progress and step event in one round trip.
# Returns 1 while the run still owns the job, 0 once it does not.
PROGRESS = PRELUDE + r"""
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
redis.call('HSET', jkey, 'heartbeat_at', now)
if ARGV[5] ~= '' then redis.call('HSET', jkey, 'step', ARGV[5], 'updated_at', now) end
if ARGV[6] ~= '' then
  redis.call('XADD', ekey, 'MAXLEN', '~', EVENTS_MAX, '*', 'type', 'step', 'data', ARGV[6])
end
if ARGV[7] ~= '' then redis.call('HSETNX', jkey, 'first_command_at', ARGV[7]) end
return 1
"""

# ARGV[4] = attempt (fencing token), ARGV[5] = final state, ARGV[6] = category or '',
# ARGV[7] = error or '', ARGV[8] = result JSON, ARGV[9] = ttl. Returns 1 if this call finished
# the job, 0 if the run no longer owned it (finished, cancelled or taken over by a redelivery).
FINISH = PRELUDE + r"""
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
local final, category, err = ARGV[5], ARGV[6], ARGV[7]
redis.call('HSET', jkey, 'finished_at', now, 'result', ARGV[8])
if category ~= '' then redis.call('HSET', jkey, 'category', category) end
if err ~= '' then redis.call('HSET', jkey, 'error', err) end
local data = {}
if category ~= '' then data['category'] = category end
set_state('running', final, data)
expire_finished(ARGV[9])
return 1
"""

# ARGV[4] = ttl. Returns {outcome, state}: missing | finished | cancelled (never started) |
# requested (running: the executor sees the flag between actions).
CANCEL = PRELUDE + r"""
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) then return {'finished', state} end
redis.call('HSET', jkey, 'cancel_requested', '1', 'updated_at', now)
if state == 'queued' then
  redis.call('HSET', jkey, 'finished_at', now)
  set_state(state, 'cancelled', {})
  expire_finished(ARGV[4])
  return {'cancelled', 'cancelled'}
end
add_event('cancel_requested', {at = tonumber(now)})
return {'requested', state}
"""

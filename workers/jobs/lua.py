"""The job state machine as Redis Lua scripts: each transition is one atomic step on the server.

queued -> running -> succeeded | failed | cancelled, and running -> retrying -> running when a
delivery finds the job's previous run dead. Because a script runs alone on the server, two workers
can never both move a job to running, and a run can only finish a job while it still owns it: the
``attempts`` value it was given at start is its fencing token.

One way leads out of a final state: a job that keeps its session (``options.keep_session``) goes
back to running when a follow-up is accepted (``FOLLOW_UP``), while the worker holding its session
is alive; the follow-up runs under the same attempt, and ends through ``FINISH`` like any run.
Pausing is a flag on a running job (``paused``), not a state: the job keeps its worker and lease.

Every script takes ``ARGV[1]`` = key prefix, ``ARGV[2]`` = job id, ``ARGV[3]`` = now (epoch
seconds, from the caller's clock) and builds key names the way ``keys`` documents.
"""

from __future__ import annotations

from workers.jobs.models import FINAL_STATES

EVENTS_MAX = 10000  # entries kept per job event stream (approximate trim)

PRELUDE = r"""
local prefix, id, now = ARGV[1], ARGV[2], ARGV[3]
local jkey = prefix .. 'job:' .. id
local ekey = jkey .. ':events'
local EVENTS_MAX = """ + str(EVENTS_MAX) + r"""
local FINAL = {""" + ", ".join(f"{s.value} = true" for s in sorted(FINAL_STATES)) + r"""}

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

-- The latest run of a job that keeps its session (``run:{n}``, see ``records``) ends as ``state``
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

-- Record a notification owed (a webhook), to be sent by whoever runs the outbox (``outbox``).
local function owe(delivery, url, event, kind, ref)
  redis.call('HSET', prefix .. 'outbox', delivery, cjson.encode({url = url, event = event, kind = kind, ref = ref}))
  redis.call('ZADD', prefix .. 'outbox:due', now, delivery)
end

-- Mark the batch completed once every job finished, exactly once; owe its webhook. 1 if it did.
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
  if h[6] and h[6] ~= '' then owe('batch.finished:' .. batch, h[6], 'batch.finished', 'batch', batch) end
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
"""

# ARGV[4] = flat field/value JSON array, ARGV[5] = idempotency key or '', ARGV[6] = ttl,
# ARGV[7..] = label index keys. Returns {job id, 1 if created else 0}.
CREATE = PRELUDE + r"""
local idem, ttl = ARGV[5], ARGV[6]
if redis.call('EXISTS', jkey) == 1 then return {id, 1} end  -- a retry of a call whose reply was lost
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
  finalize(ttl)
  return {'cancelled', attempts}
end
if state == 'running' and tonumber(redis.call('HGET', jkey, 'runs') or '0') > 1 then
  -- a follow-up ran in the lost worker's browser session, which no other worker has
  local err = 'the worker holding the job\'s session was lost during a follow-up; '
    .. 'a session cannot move to another worker'
  redis.call('HSET', jkey, 'finished_at', now, 'category', 'worker_lost', 'error', err, 'session', 'closed',
    'session_note', 'its worker was lost')
  redis.call('HDEL', jkey, 'paused', 'paused_at')
  end_run('failed', 'worker_lost', err)
  set_state(state, 'failed', {category = 'worker_lost'})
  finalize(ttl)
  return {'lost', attempts}
end
if state == 'running' then
  set_state('running', 'retrying', {reason = 'the worker running attempt ' .. attempts .. ' was lost'})
  state = 'retrying'
end
if attempts >= max_attempts then
  redis.call('HSET', jkey, 'finished_at', now, 'category', 'worker_lost',
    'error', 'the job\'s worker was lost ' .. attempts .. ' time(s); giving up after ' .. max_attempts .. ' attempt(s)')
  set_state(state, 'failed', {category = 'worker_lost'})
  finalize(ttl)
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

# ARGV[4] = attempt (fencing token), ARGV[5] = event type, ARGV[6] = event JSON. Appends an event
# the run reports (the agent's execution events) while it still owns the job; returns 1, else 0.
EVENT = PRELUDE + r"""
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
redis.call('XADD', ekey, 'MAXLEN', '~', EVENTS_MAX, '*', 'type', ARGV[5], 'data', ARGV[6])
return 1
"""

# ARGV[4] = attempt (fencing token), ARGV[5] = final state, ARGV[6] = category or '',
# ARGV[7] = error or '', ARGV[8] = result JSON, ARGV[9] = ttl; for a job that keeps its session:
# ARGV[10] = epoch the session is kept until, or 'closed' (ARGV[13] says why), ARGV[11] = run
# number, ARGV[12] = run record JSON. Returns 1 if this call finished the job, 0 if the run no
# longer owned it (finished, cancelled or taken over by a redelivery).
FINISH = PRELUDE + r"""
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
local final, category, err = ARGV[5], ARGV[6], ARGV[7]
local session, run = ARGV[10] or '', ARGV[11] or ''
redis.call('HSET', jkey, 'finished_at', now, 'result', ARGV[8])
redis.call('HDEL', jkey, 'paused', 'paused_at')
if run ~= '' then redis.call('HSET', jkey, 'runs', run, 'run:' .. run, ARGV[12]) end
if session == 'closed' then
  redis.call('HSET', jkey, 'session', 'closed', 'session_note', ARGV[13] or '')
  redis.call('HDEL', jkey, 'session_until')
elseif session ~= '' then
  redis.call('HSET', jkey, 'session', 'kept', 'session_until', session, 'heartbeat_at', now)
end
if category ~= '' then redis.call('HSET', jkey, 'category', category) end
if err ~= '' then redis.call('HSET', jkey, 'error', err) end
local data = {}
if category ~= '' then data['category'] = category end
set_state('running', final, data)
finalize(ARGV[9])
return 1
"""

# ARGV[4] = ttl. Returns {outcome, state}: missing | finished | cancelled (never started) |
# requested (running: the executor sees the flag between actions) | session_closed (finished,
# its kept session is closed now: a close marker wakes the worker holding it).
CANCEL = PRELUDE + r"""
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) and redis.call('HGET', jkey, 'session') == 'kept' then
  redis.call('HSET', jkey, 'session', 'closed', 'session_note', 'closed by a cancel', 'updated_at', now)
  redis.call('HDEL', jkey, 'session_until')
  redis.call('RPUSH', jkey .. ':follow-ups', cjson.encode({close = true}))
  add_event('session', {session = 'closed', reason = 'closed by a cancel', at = tonumber(now)})
  return {'session_closed', state}
end
if is_final(state) then return {'finished', state} end
redis.call('HSET', jkey, 'cancel_requested', '1', 'updated_at', now)
if state == 'queued' then
  redis.call('HSET', jkey, 'finished_at', now)
  set_state(state, 'cancelled', {})
  finalize(ARGV[4])
  return {'cancelled', 'cancelled'}
end
add_event('cancel_requested', {at = tonumber(now)})
return {'requested', state}
"""

# ARGV[2] = batch id, ARGV[4] = ttl. Completes the batch if every job finished (see ``finalize``);
# for a batch whose last jobs were duplicates, or one the reconciler repaired. Returns 1 if it did.
COMPLETE_BATCH = PRELUDE + r"""
return complete_batch(id, ARGV[4])
"""

# Interactive sessions (``sessions``). KEYS[1] = the ``sessions`` zset, KEYS[2] = the session's hash;
# ARGV[1] = now, ARGV[2] = the cap, ARGV[3] = the record's first expiry (epoch seconds),
# ARGV[4] = its TTL in seconds, ARGV[5] = its id, ARGV[6...] = field, value pairs. Returns 1, or 0
# when the cap is reached (sessions whose record expired, i.e. whose worker died, do not count).
SESSION_OPEN = r"""
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[5])
local fields = {}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""

# A worker's heartbeat for one session: KEYS as above; ARGV[1] = new expiry (epoch), ARGV[2] = TTL,
# ARGV[3] = the id, ARGV[4...] = field, value pairs to set. Returns 0 (and sets nothing) when the
# record is gone (closed from elsewhere, or expired): the worker then closes the session.
SESSION_BEAT = r"""
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('ZREM', KEYS[1], ARGV[3])
  return 0
end
if #ARGV > 3 then
  local fields = {}
  for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
  redis.call('HSET', KEYS[2], unpack(fields))
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
return 1
"""

# --- politeness (``politeness``): per-domain slots and navigation spacing -------------------------
# These use the server's clock (``TIME``), not the caller's: workers on several hosts share one
# time line, so a skewed host can neither overstay a slot nor navigate early. Numbers go back as
# strings (a Lua number would be truncated to an integer reply).

REDIS_NOW = r"""
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

# KEYS[1] = the domain's slots zset; ARGV[1] = job id, ARGV[2] = limit (0: none), ARGV[3] = lease
# seconds. Takes (or renews) the job's slot if fewer than ``limit`` live slots are held; 1 if it
# holds one now, else 0. Lapsed slots (a dead worker's) are dropped first.
SLOT_TAKE = REDIS_NOW + r"""
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
local limit = tonumber(ARGV[2])
if not held and limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(lease) + 1)
return 1
"""

# KEYS = slots zsets, ARGV[1] = lease seconds, ARGV[2..] = the job id holding a slot in each key.
# Extends the slots still held (a lapsed one is not taken back: its job goes on, past the count).
SLOT_RENEW = REDIS_NOW + r"""
local lease = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  if redis.call('ZADD', key, 'XX', 'CH', now + lease, ARGV[i + 1]) == 1 then
    redis.call('EXPIRE', key, math.ceil(lease) + 1)
  end
end
return #KEYS
"""

# KEYS[1] = the domain's last-navigation key; ARGV[1] = this job's min delay (seconds). Reserves
# the earliest time at least ``delay`` after the latest reservation (or now) for this navigation;
# returns how long to wait for it (seconds, as a string).
NAV_RESERVE = REDIS_NOW + r"""
local delay = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local at = math.max(now, last + delay)
redis.call('SET', KEYS[1], string.format('%.6f', at), 'PX', math.ceil((at - now + delay) * 1000) + 1000)
return string.format('%.6f', at - now)
"""

# Follow-ups and pause (``store``): the only way out of a final state is FOLLOW_UP, and only while
# the worker that ran the job still holds its session (``session`` = kept, not past
# ``session_until``, heartbeat fresh); the job goes back to running, under the same attempt (so the
# same worker's run owns it), and the task is pushed on ``job:{id}:follow-ups``, where that
# worker waits (BLPOP).

# ARGV[4] = follow-up JSON {task}, ARGV[5] = seconds a worker's heartbeat counts as fresh.
# Returns {outcome, run, event id}: missing | not_finished | not_kept | closed | lost | accepted.
FOLLOW_UP = PRELUDE + r"""
if redis.call('EXISTS', jkey) == 0 then return {'missing', 0, ''} end
local f = redis.call('HMGET', jkey, 'state', 'session', 'session_until', 'heartbeat_at', 'labels', 'runs', 'schedule')
local state = f[1]
if not is_final(state) then return {'not_finished', 0, ''} end
if not f[2] then return {'not_kept', 0, ''} end
if f[2] ~= 'kept' or tonumber(now) >= tonumber(f[3] or '0') then return {'closed', 0, ''} end
if tonumber(now) - tonumber(f[4] or '0') >= tonumber(ARGV[5]) then return {'lost', 0, ''} end
local run = tonumber(f[6] or '1') + 1
local task = cjson.decode(ARGV[4])['task']
redis.call('PERSIST', jkey)
redis.call('PERSIST', ekey)
redis.call('ZREM', prefix .. 'jobs:expiring', expiring_member(state, f[5], f[7]))
redis.call('HDEL', jkey, 'finished_at', 'category', 'error', 'result', 'cancel_requested', 'session_until')
redis.call('HSET', jkey, 'runs', run, 'step', 0, 'started_at', now, 'heartbeat_at', now, 'session', 'kept',
  'run:' .. run, cjson.encode({run = run, task = task, state = 'running', started_at = tonumber(now)}))
local fkey = jkey .. ':follow-ups'
redis.call('RPUSH', fkey, cjson.encode({run = run, task = task}))
redis.call('EXPIRE', fkey, 86400)
local event = set_state(state, 'running', {run = run, follow_up = true})
return {'accepted', run, event}
"""

# ARGV[4] = attempt. The worker's idle session ends: 1 if it did, 0 when a follow-up is waiting in
# the list (accepted just before the idle time ran out: the worker runs it) or the run lost the job.
END_KEPT_SESSION = PRELUDE + r"""
if redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then return 0 end
if redis.call('LLEN', jkey .. ':follow-ups') > 0 then return 0 end
if redis.call('HGET', jkey, 'session') == 'kept' and is_final(redis.call('HGET', jkey, 'state')) then
  redis.call('HSET', jkey, 'session', 'closed', 'session_note', ARGV[5])
  redis.call('HDEL', jkey, 'session_until')
  add_event('session', {session = 'closed', reason = ARGV[5], at = tonumber(now)})
end
return 1
"""

# ARGV[4] = attempt. Heartbeat of an idle kept session (its job is final, so PROGRESS refuses it).
KEPT_SESSION_BEAT = PRELUDE + r"""
if redis.call('HGET', jkey, 'attempts') ~= ARGV[4] or redis.call('HGET', jkey, 'session') ~= 'kept' then
  return 0
end
redis.call('HSET', jkey, 'heartbeat_at', now)
return 1
"""

# Returns {outcome, state}: missing | finished | not_running (queued or retrying) | already | paused.
PAUSE = PRELUDE + r"""
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) then return {'finished', state} end
if state ~= 'running' then return {'not_running', state} end
if redis.call('HGET', jkey, 'paused') == '1' then return {'already', state} end
redis.call('HSET', jkey, 'paused', '1', 'paused_at', now, 'updated_at', now)
add_event('pause_requested', {at = tonumber(now)})
return {'paused', state}
"""

# Returns {outcome, state}: missing | finished | not_paused | resumed.
RESUME = PRELUDE + r"""
if redis.call('EXISTS', jkey) == 0 then return {'missing', ''} end
local state = redis.call('HGET', jkey, 'state')
if is_final(state) then return {'finished', state} end
if redis.call('HGET', jkey, 'paused') ~= '1' then return {'not_paused', state} end
redis.call('HDEL', jkey, 'paused', 'paused_at')
redis.call('HSET', jkey, 'updated_at', now)
add_event('resume_requested', {at = tonumber(now)})
return {'resumed', state}
"""

--! prelude: job_prelude
-- Follow-ups: the only way out of a final state, and only while the worker that ran the job still
-- holds its session (``session`` = kept, not past ``session_until``, heartbeat fresh); the job goes
-- back to running, under the same attempt (so the same worker's run owns it), and the task is
-- pushed on ``job:{id}:follow-ups``, where that worker waits (BLPOP).
-- ARGV[4] = follow-up JSON {task}, ARGV[5] = seconds a worker's heartbeat counts as fresh.
-- Returns {outcome, run, event id}: missing | not_finished | not_kept | closed | lost | accepted.
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

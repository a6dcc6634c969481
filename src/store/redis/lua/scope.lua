-- A store's and its scopes' metadata, on the scope's slot: the scope record (string, JSON), its
-- epochs (hash n -> JSON entry), its dropped epochs (hash n -> JSON entry), the plan of an open
-- epoch's grown slices (list), and the number of its frontier's partition streams.

-- Raises the number of the frontier's partition streams of a scope to at least n.
local function raise_queues(key, n)
  if tonumber(redis.call('GET', key) or '1') < n then redis.call('SET', key, n) end
end

-- KEYS: scope record, epochs, queues. ARGV: record json, epoch number, entry json, partitions.
-- First creator wins.
local function ss_create(keys, args)
  local existing = redis.call('GET', keys[1])
  if existing then
    -- Rewritten as it is: a write, so that a WAIT behind this call covers the record.
    redis.call('SET', keys[1], existing)
    return {'exists', existing}
  end
  raise_queues(keys[3], tonumber(args[4]))
  redis.call('SET', keys[1], args[1])
  redis.call('HSET', keys[2], args[2], args[3])
  return {'created', args[1]}
end

-- KEYS: scope record, epochs, queues. ARGV: record json, most partitions, then pairs of epoch
-- number and entry json.
local function ss_create_many(keys, args)
  if redis.call('EXISTS', keys[1]) == 1 then return 'exists' end
  raise_queues(keys[3], tonumber(args[2]))
  redis.call('SET', keys[1], args[1])
  for i = 3, #args, 2 do redis.call('HSET', keys[2], args[i], args[i + 1]) end
  return 'created'
end

-- KEYS: scope record, epochs, queues. ARGV: epoch the caller rotates, sealed entry, next number,
-- next entry, new record, next's partitions.
local function ss_rotate(keys, args)
  local record = redis.call('GET', keys[1])
  if not record then return {'missing'} end
  local open = cjson.decode(record).openEpoch
  if open ~= tonumber(args[1]) then return {'moved', open} end
  raise_queues(keys[3], tonumber(args[6]))
  redis.call('HSET', keys[2], args[1], args[2], args[3], args[4])
  redis.call('SET', keys[1], args[5])
  return {'ok'}
end

-- KEYS: an open epoch's plan list. ARGV: slices the caller found in it, the spec (JSON) of the
-- next. Appends it unless another caller planned that slice first (every partition grows into
-- the same slices); returns the whole plan.
local function ss_plan(keys, args)
  if redis.call('LLEN', keys[1]) == tonumber(args[1]) then redis.call('RPUSH', keys[1], args[2]) end
  return redis.call('LRANGE', keys[1], 0, -1)
end

-- KEYS: format, scopes. ARGV: the key layout this version writes. The store's layout version:
-- set on first use; 'none' for a store whose scopes were created before layouts were versioned.
local function ss_format(keys, args)
  local v = redis.call('GET', keys[1])
  if v then return v end
  if redis.call('SCARD', keys[2]) > 0 then return 'none' end
  redis.call('SET', keys[1], args[1])
  return args[1]
end

-- KEYS: epochs, drops. ARGV: epoch number. Moves the entry to the drops (gone for readers).
local function ss_drop(keys, args)
  local entry = redis.call('HGET', keys[1], args[1])
  if not entry then return false end
  redis.call('HSET', keys[2], args[1], entry)
  redis.call('HDEL', keys[1], args[1])
  return entry
end

-- KEYS: the frontier's settings hash. ARGV: the partitions of a new frontier's queues, the
-- queue key of a frontier that has none stored (the default), then pairs of a setting and its
-- value. Pins a new frontier's layout and partitions, sets the pairs and starts a new revision
-- (each queue partition re-times its queues when it sees it); replies every setting. Once the
-- queue key is pinned (ss_frontier_pin), a change of it changes nothing at all: the reply shows
-- the key unchanged, and the caller refuses.
local function ss_frontier_configure(keys, args)
  redis.call('HSETNX', keys[1], 'layout', '3')
  redis.call('HSETNX', keys[1], 'partitions', args[1])
  if redis.call('HEXISTS', keys[1], 'pinned') == 1 then
    local current = redis.call('HGET', keys[1], 'queueKey') or args[2]
    for i = 3, #args - 1, 2 do
      if args[i] == 'queueKey' and args[i + 1] ~= current then return redis.call('HGETALL', keys[1]) end
    end
  end
  if #args > 2 then redis.call('HSET', keys[1], unpack(args, 3)) end
  redis.call('HINCRBY', keys[1], 'rev', 1)
  return redis.call('HGETALL', keys[1])
end

-- KEYS: the frontier's settings hash. ARGV: a key layout, the layout that replaces it (a
-- migration's last step: lua/queue-migrate.lua). Replies the layout now.
local function ss_frontier_layout(keys, args)
  if redis.call('HGET', keys[1], 'layout') == args[1] then redis.call('HSET', keys[1], 'layout', args[2]) end
  return redis.call('HGET', keys[1], 'layout')
end

-- KEYS: the frontier's settings hash. Pins the queue key (ss_frontier_configure changes it no
-- more) and replies every setting: what an enqueue reads before it computes its URLs' queues.
local function ss_frontier_pin(keys)
  redis.call('HSETNX', keys[1], 'pinned', '1')
  return redis.call('HGETALL', keys[1])
end

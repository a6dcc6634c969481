-- The frontier's queues as a whole, per partition (queue-state.lua): settings of one queue,
-- counts, listing, deletion.

-- ARGV: settings, queue key, own delay ms ('' unchanged, 'none' the default again), blocked until
-- ms ('' unchanged), crawl limit ('' unchanged, 'none' no limit).
local function ss_fq_set(keys, args)
  local F = fbegin(keys, args)
  local key = args[4]
  local q = queue_of(F, key)
  if args[5] == 'none' then q.d = nil elseif args[5] ~= '' then q.d = tonumber(args[5]) end
  if args[6] ~= '' then q.b = tonumber(args[6]) end
  if args[7] == 'none' then q.l = nil elseif args[7] ~= '' then q.l = tonumber(args[7]) end
  touch(F, key)
  fflush(F)
  return 'ok'
end

-- ARGV: settings, queue key. Replies its queue_stats, or nothing when the queue is unknown.
local function ss_fq_queue(keys, args)
  local F = fbegin(keys, args)
  local q = queue_get(F, args[4])
  if not q then return {} end
  return queue_stats(F, q)
end

-- ARGV: settings, the key to list after ('' from the first), limit. Replies per queue that holds
-- entries, in key order: its key, then its queue_stats.
local function ss_fq_list(keys, args)
  local F = fbegin(keys, args)
  local from = args[4] == '' and '-' or ('(' .. args[4])
  local out = {}
  for _, key in ipairs(redis.call('ZRANGEBYLEX', F.names, from, '+', 'LIMIT', 0, tonumber(args[5]))) do
    local q = queue_get(F, key)
    if q then
      out[#out + 1] = key
      out[#out + 1] = queue_stats(F, q)
    end
  end
  return out
end

-- Every entry of queue q: its FIFO's, its set's, and its leased ones (found in the lease set).
-- A number its FIFO keeps of an entry that left it is not one of them.
local function queue_entries(F, q)
  local ids = {}
  local function keep(id, where)
    local r = record_get(F, id)
    if r and r.qn == q.qn and r.st == where then ids[#ids + 1] = id end
  end
  if q.h then
    for c = q.h, q.z do
      for _, id in ipairs(chunk_get(F, q.qn, c)) do keep(id, IN_FIFO) end
    end
  end
  for _, member in ipairs(set_range(F, q.qn, -1)) do keep(set_parse(member).id, IN_SET) end
  if q.k > 0 then
    for _, member in ipairs(redis.call('ZRANGE', F.leases, 0, -1)) do keep(tonumber(member), LEASED) end
  end
  return ids
end

-- ARGV: settings, queue key. Removes the queue: its entries and its settings; replies how many
-- entries it held.
local function ss_fq_delete(keys, args)
  local F = fbegin(keys, args)
  local key = args[4]
  local q = queue_get(F, key)
  local n = 0
  if q then
    for _, id in ipairs(queue_entries(F, q)) do
      remove(F, id, record_get(F, id), q)
      n = n + 1
    end
    fifo_settle(F, q)
    redis.call('HDEL', F.qn, q.qn)
  end
  if q then redis.call('ZREM', F.ready, ready_member(key, q.t)) end
  F.queues[key] = false
  redis.call('HDEL', F.qr, key)
  redis.call('ZREM', F.names, key)
  fflush(F)
  return n
end

-- ARGV: settings, '1' to zero the done and failed counts. Removes every queue; replies how many
-- entries they held. What was admitted from the inboxes stays marked, and the counts stay unless asked.
local function ss_fq_clear(keys, args)
  local F = fbegin(keys, args)
  local n = tonumber(redis.call('HGET', F.counts, 'n') or '0')
  redis.call('DEL', F.pg, F.ux, F.qr, F.qn, F.fo, F.s, F.leases, F.ready, F.names)
  redis.call('HSET', F.counts, 'n', 0, 'il', 0, 'is', 0, 'ix', 0)
  if args[4] == '1' then redis.call('HSET', F.counts, 'done', 0, 'failed', 0) end
  return n
end

-- ARGV: settings. Replies entries (waiting, scheduled and leased), leased, done, queues that hold
-- entries, failed (absent from a counts hash written before it was counted: 0).
local function ss_fq_stats(keys, args)
  local F = fbegin(keys, args)
  return {
    tonumber(redis.call('HGET', F.counts, 'n') or '0'), redis.call('ZCARD', F.leases),
    tonumber(redis.call('HGET', F.counts, 'done') or '0'), redis.call('ZCARD', F.names),
    tonumber(redis.call('HGET', F.counts, 'failed') or '0'),
  }
end

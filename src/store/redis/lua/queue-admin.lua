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
  queue_put(F, key, q)
  refresh(F, key, q)
  return 'ok'
end

-- ARGV: settings, queue key. Replies its queue_stats, or nothing when the queue is unknown.
local function ss_fq_queue(keys, args)
  local F = fbegin(keys, args)
  local q = queue_get(F, args[4])
  if not q then return {} end
  return queue_stats(F, args[4], q)
end

-- ARGV: settings, the key to list after ('' from the first), limit. Replies per queue that holds
-- entries, in key order: its key, then its queue_stats.
local function ss_fq_list(keys, args)
  local F = fbegin(keys, args)
  local from = args[4] == '' and '-' or ('(' .. args[4])
  local out = {}
  for _, key in ipairs(redis.call('ZRANGEBYLEX', F.names, from, '+', 'LIMIT', 0, tonumber(args[5]))) do
    out[#out + 1] = key
    out[#out + 1] = queue_stats(F, key, queue_of(F, key))
  end
  return out
end

-- ARGV: settings, queue key. Removes the queue: its entries and its settings; replies how many
-- entries it held.
local function ss_fq_delete(keys, args)
  local F = fbegin(keys, args)
  local key = args[4]
  local n = 0
  for _, set in ipairs({F.w, F.l}) do
    for _, member in ipairs(members(set, key, -1)) do
      local id = member_id(member)
      local e = entry_get(F, id)
      if e then
        remove(F, id, e)
        n = n + 1
      end
    end
  end
  redis.call('HDEL', F.qs, key)
  redis.call('ZREM', F.names, key)
  redis.call('ZREM', F.ready, key)
  return n
end

-- ARGV: settings, '1' to zero the done and failed counts. Removes every queue; replies how many
-- entries they held. What was admitted from the inboxes stays marked, and the counts stay unless asked.
local function ss_fq_clear(keys, args)
  local F = fbegin(keys, args)
  local n = tonumber(redis.call('HGET', F.counts, 'n') or '0')
  redis.call('DEL', F.ent, F.url, F.qs, F.w, F.l, F.leases, F.ready, F.names)
  redis.call('HSET', F.counts, 'n', 0)
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

-- What the adds of both kinds of epoch (ss_add, ss_count_add) do before and after deciding their
-- URLs. KEYS: state, slices, batch, previous batch, the partition's inbox (inbox.lua), the
-- partition's frontier stream of layout 1, the filters (of every slice the geometry names). ARGV:
-- slices assumed, n, geometry json, positions, batch ttl s, '1' to delete the previous batch's
-- answers[, queue items, epoch number].

-- A retried batch gets its first answers back; a sealed, missing or changed epoch, a batch larger
-- than the planned slices can take, malformed queue items, or an enqueue into a frontier of
-- layout 1 (its stream exists: 'old-frontier', nothing is read or written) is refused; else the batch's
-- decoded arguments and each slice's added count. Returns (reply) or (nil, batch).
local function batch_begin(keys, args)
  local state, slices, batch = keys[1], keys[2], keys[3]
  local earlier = earlier_answer(batch, keys[4], args[6] == '1', tonumber(args[5]))
  if earlier then return {'done', earlier} end
  local open = redis.call('HGET', state, 'open')
  if not open then return {'missing'} end
  if open ~= '1' then return {'sealed'} end
  local have = redis.call('LLEN', slices)
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local n = tonumber(args[2])
  local geo = cjson.decode(args[3])
  local planned = #geo.caps
  local added = {}
  for j = 1, planned do added[j] = 0 end
  for j = 1, have do added[j] = tonumber(redis.call('HGET', state, 'a' .. (j - 1)) or '0') end
  local spare = 0
  for j = have + 1, planned do spare = spare + geo.caps[j] end
  if n > geo.caps[have] - added[have] + spare and planned < geo.max then return {'short', added[have]} end
  local items = nil
  if args[7] and redis.call('EXISTS', keys[6]) == 1 then return {'old-frontier'} end
  if args[7] then
    items = queue_items(args[7], n)
    if not items then return {'malformed'} end
  end
  local per_url, first, count, hashes, offsets, blocked = layout(geo)
  return nil, {
    state = state, slices = slices, batch = batch, have = have, n = n, geo = geo, planned = planned,
    added = added, items = items, blob = args[4], filters = filter_keys(keys, 7), per_url = per_url,
    first = first, count = count, hashes = hashes, offsets = offsets, blocked = blocked,
  }
end

-- A batch's newest slice (cur) when it is full and a planned slice is left: the next is appended
-- to the partition's slices and its filters allocated. Returns the slice new URLs now go to.
local function grow_if_full(b, cur)
  if b.added[cur] < b.geo.caps[cur] or cur >= b.planned then return cur end
  redis.call('RPUSH', b.slices, b.geo.planned[cur - b.have + 1])
  cur = cur + 1
  for f = b.first[cur], b.first[cur] + b.count[cur] - 1 do allocate(b.filters[f - 1], b.geo.bytes[f]) end
  return cur
end

-- The batch's counts, the enqueue of its new URLs (when asked: KEYS[5] the inbox, ARGV[7] the
-- items, ARGV[8] the epoch), its answers kept for a retry.
local function batch_end(keys, args, b, cur, flags, fresh)
  local counts = {}
  for j = 1, cur do
    counts[#counts + 1] = 'a' .. (j - 1)
    counts[#counts + 1] = b.added[j]
  end
  redis.call('HSET', b.state, unpack(counts))
  redis.call('HINCRBY', b.state, 'submitted', b.n)
  redis.call('HINCRBY', b.state, 'added', fresh)
  -- The batch's id, the last part of its answers key: the URLs of one add keep their order in their queues.
  if b.items then queue_new(keys[5], flags, b.items, args[8], string.match(b.batch, '[^:]*$')) end
  local answers = table.concat(flags)
  keep_answer(b.batch, answers, tonumber(args[5]))
  return {'ok', answers, cur, b.added[cur]}
end

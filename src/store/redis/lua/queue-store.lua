-- A partition of the frontier's queues as one call sees it (key layout 3, docs/redis.md "Keys"):
-- its keys, and what the call read of them (pages of records, queue records, FIFO chunks, URL
-- index buckets), changed in memory and written back once, at the end of the call (write_back,
-- through fflush in queue-state.lua). The call is atomic, so writing at its end changes nothing
-- another caller can see.
--
-- KEYS of every queue function (fkeys): seq (entry numbers), pg (hash page -> records), ux (hash
-- bucket -> URL index entries), qr (hash queue key -> queue record, JSON), qn (hash queue number ->
-- queue key), fo (hash 'Q:C' -> chunk C of queue Q's FIFO), s (lexical sorted set of the scheduled
-- and given-back entries: queue number, due ms, place, entry number, big-endian), leases (entry
-- number scored by lease end ms), ready (last take and queue key, ready_member in queue-state.lua,
-- scored by the time it is ready), names (queue
-- keys holding entries, lexical), marks (hash inbox -> last inbox id admitted), counts (hash: n
-- entries, done, failed, q the last queue number, il, is and ix the URL index's level, split
-- bucket and entries), cfg (hash rev, rm); then for the calls answered once, answer and previous
-- answer. ARGV always begins with the settings: their revision, the default delay ms, the
-- in-flight limit (0: none).

-- The key of queue number qn (qn -> key is written once, when the queue is created).
local function key_of(F, qn)
  local key = F.keyof[qn]
  if key == nil then
    key = redis.call('HGET', F.qn, qn)
    if not key then error('seenstore: ' .. F.qn .. ' names no queue ' .. qn) end
    F.keyof[qn] = key
  end
  return key
end

local function fkeys(keys)
  local F = {
    seq = keys[1], pg = keys[2], ux = keys[3], qr = keys[4], qn = keys[5], fo = keys[6], s = keys[7],
    leases = keys[8], ready = keys[9], names = keys[10], marks = keys[11], counts = keys[12], cfg = keys[13],
    answer = keys[14], previous = keys[15],
    pages = {}, queues = {}, keyof = {}, touched = {}, chunks = {}, buckets = {}, entries = 0,
  }
  F.resolve = function(qn) return key_of(F, qn) end
  return F
end

-- A queue's record: qn its number, c completed, d own delay ms, b blocked until ms, l crawl limit,
-- t last take ms, f entries in its FIFO, s entries in the set, k leased, h and z the first and last
-- chunk of its FIFO (absent: none), fd the due time of the FIFO's first entry. nil when unknown.
local function queue_get(F, key)
  local q = F.queues[key]
  if q == nil then
    local json = redis.call('HGET', F.qr, key)
    q = json and cjson.decode(json) or false
    F.queues[key] = q
    if q then F.keyof[q.qn] = key end
  end
  return q or nil
end

-- Changed in this call: settled, re-timed and written back by fflush.
local function touch(F, key)
  F.touched[key] = true
end

local function queue_of(F, key)
  local q = queue_get(F, key)
  if not q then
    q = {qn = redis.call('HINCRBY', F.counts, 'q', 1), c = 0, f = 0, s = 0, k = 0}
    redis.call('HSET', F.qn, q.qn, key)
    F.queues[key], F.keyof[q.qn] = q, key
    touch(F, key)
  end
  return q
end

-- Most arguments of one command built here (Lua's C stack bounds unpack).
local ARGS_MAX = 1000

-- Writes fields and values (`sets`, flat) and deletes fields (`dels`) of a hash, a command per ARGS_MAX.
local function hash_write(hash, sets, dels)
  for from = 1, #sets, ARGS_MAX do
    redis.call('HSET', hash, unpack(sets, from, math.min(#sets, from + ARGS_MAX - 1)))
  end
  for from = 1, #dels, ARGS_MAX do
    redis.call('HDEL', hash, unpack(dels, from, math.min(#dels, from + ARGS_MAX - 1)))
  end
end

-- The values of `fields` of a hash (false: absent), a command per ARGS_MAX fields.
local function hash_read(hash, fields)
  local values = {}
  for from = 1, #fields, ARGS_MAX do
    local part = redis.call('HMGET', hash, unpack(fields, from, math.min(#fields, from + ARGS_MAX - 1)))
    for i, value in ipairs(part) do values[from + i - 1] = value end
  end
  return values
end

local function page_of(F, p)
  local page = F.pages[p]
  if page == nil then
    local blob = redis.call('HGET', F.pg, int(p))
    page = blob and page_decode(blob, F.pg .. ' page ' .. int(p)) or page_new(F.pg .. ' page ' .. int(p))
    F.pages[p] = page
  end
  return page
end

-- Entry id's record: st where it is (IN_FIFO, IN_SET, LEASED), qn and q its queue's number and
-- key, u URL, e epoch, t due ms, n place among those due at once, a attempts, c created ms, l
-- lease end ms (0: not leased), o owner, d data (JSON text); nil when there is none.
local function record_get(F, id)
  local page = page_of(F, math.floor(id / PAGE_ENTRIES))
  local slot = id % PAGE_ENTRIES
  local r = page.recs[slot]
  if r == nil and not page.changed[slot] then
    local body = page_body(page, slot)
    if body then
      r = record_decode(body, page, F.resolve)
      page.recs[slot] = r
    end
  end
  return r
end

-- Every change of a record goes through here: its page keeps the table, encoded at write_back.
local function record_put(F, id, r)
  local page = page_of(F, math.floor(id / PAGE_ENTRIES))
  local slot = id % PAGE_ENTRIES
  if page.due == nil then page.due, page.place = r.t, r.n end
  page.recs[slot], page.changed[slot], page.dirty = r, true, true
end

local function record_delete(F, id)
  local page = page_of(F, math.floor(id / PAGE_ENTRIES))
  local slot = id % PAGE_ENTRIES
  page.recs[slot], page.changed[slot], page.dirty = nil, true, true
end

-- A FIFO chunk: its entry numbers as a varint, then zigzag varint differences (consecutive
-- admissions differ by 1: a byte each). A chunk is kept as read (its blob) while its head is read
-- and trimmed (fifo_cursor: a take touches only what it takes), and decoded (ids) to append.
local FIFO_CHUNK_ENTRIES = 256

local function chunk_encode(ids)
  local parts = {}
  for i, id in ipairs(ids) do parts[i] = i == 1 and varint(id) or varint(zigzag(id - ids[i - 1])) end
  return table.concat(parts)
end

local function chunk_entry(F, qn, c)
  local field = qn .. ':' .. c
  local chunk = F.chunks[field]
  if chunk == nil then
    chunk = {blob = redis.call('HGET', F.fo, field) or ''}
    F.chunks[field] = chunk
  end
  return chunk
end

-- Chunk c of queue qn's entry numbers, decoded (a table the caller may change, then chunk_set).
local function chunk_get(F, qn, c)
  local chunk = chunk_entry(F, qn, c)
  if chunk.ids == nil then
    local ids, at, id, blob = {}, 1, 0, chunk.blob
    while at <= #blob do
      local v
      v, at = read_varint(blob, at)
      id = #ids == 0 and v or id + unzigzag(v)
      ids[#ids + 1] = id
    end
    chunk.ids, chunk.blob = ids, nil
  end
  return chunk.ids
end

-- Chunk c of queue qn's blob, as stored.
local function chunk_blob(F, qn, c)
  local chunk = chunk_entry(F, qn, c)
  if chunk.blob == nil then chunk.blob, chunk.ids = chunk_encode(chunk.ids), nil end
  return chunk.blob
end

-- Chunk c of queue qn holds `ids` (nil or empty: no chunk), or the blob `blob`.
local function chunk_set(F, qn, c, ids, blob)
  F.chunks[qn .. ':' .. c] = {ids = blob == nil and (ids or {}) or nil, blob = blob, dirty = true}
end

-- The URL index: bucket -> entries of 9 bytes, the first 32 bits of the SHA-1 of a URL then its
-- entry number (big-endian). Linear hashing keeps buckets near INDEX_SPLIT_LOAD entries however
-- many URLs wait: 2^level + split buckets, a URL in bucket h mod 2^level, or h mod 2^(level+1) for
-- the buckets below split, which are split already. A match of the hash is checked against the
-- entry's own URL: the index never stores a URL.
local INDEX_ENTRY_BYTES = 9
local INDEX_SPLIT_LOAD = 24
local INDEX_MERGE_LOAD = 8

local function url_hash(url)
  return tonumber(string.sub(redis.sha1hex(url), 1, 8), 16)
end

local function index_state(F)
  if F.ix == nil then
    local v = redis.call('HMGET', F.counts, 'il', 'is', 'ix')
    F.ix = {level = tonumber(v[1] or '0'), split = tonumber(v[2] or '0'), n = tonumber(v[3] or '0')}
  end
  return F.ix
end

local function bucket_get(F, b)
  local bucket = F.buckets[b]
  if bucket == nil then
    bucket = {blob = redis.call('HGET', F.ux, b) or ''}
    F.buckets[b] = bucket
  end
  return bucket.blob
end

local function bucket_set(F, b, blob)
  F.buckets[b] = {blob = blob, dirty = true}
end

local function bucket_address(ix, h)
  local b = h % 2 ^ ix.level
  if b < ix.split then b = h % 2 ^ (ix.level + 1) end
  return b
end

-- Reads the pages of entries `ids` that the call has not read yet, at once.
local function prefetch_pages(F, ids)
  local wanted, fields = {}, {}
  for _, id in ipairs(ids) do
    local p = math.floor(id / PAGE_ENTRIES)
    if F.pages[p] == nil and not wanted[p] then
      wanted[p] = true
      fields[#fields + 1] = int(p)
    end
  end
  for i, blob in ipairs(hash_read(F.pg, fields)) do
    local p = tonumber(fields[i])
    F.pages[p] = blob and page_decode(blob, F.pg .. ' page ' .. fields[i]) or page_new(F.pg .. ' page ' .. fields[i])
  end
end

-- Reads the index buckets of URL hashes `hashes` that the call has not read yet, at once.
local function prefetch_buckets(F, hashes)
  local ix, wanted, fields = index_state(F), {}, {}
  for _, h in ipairs(hashes) do
    local b = bucket_address(ix, h)
    if F.buckets[b] == nil and not wanted[b] then
      wanted[b] = true
      fields[#fields + 1] = b
    end
  end
  for i, blob in ipairs(hash_read(F.ux, fields)) do F.buckets[fields[i]] = {blob = blob or ''} end
end

-- Reads the pages of entries `ids` at once; with `removes`, also the index buckets of their URLs
-- (each record keeps its URL's hash, h, for index_remove).
local function prefetch_records(F, ids, removes)
  prefetch_pages(F, ids)
  if not removes then return end
  local hashes = {}
  for _, id in ipairs(ids) do
    local r = record_get(F, id)
    if r then
      r.h = r.h or url_hash(r.u)
      hashes[#hashes + 1] = r.h
    end
  end
  prefetch_buckets(F, hashes)
end

-- The entry of `url` and its record, or nil; then the URL's hash (index_add's).
local function index_find(F, url, h)
  h = h or url_hash(url)
  local blob = bucket_get(F, bucket_address(index_state(F), h))
  local needle, at = be(h, 4), 1
  while true do
    local i = string.find(blob, needle, at, true)
    if not i then return nil, nil, h end
    if (i - 1) % INDEX_ENTRY_BYTES == 0 then
      local id = read_be(blob, i + 4, 5)
      local r = record_get(F, id)
      if r and r.u == url then return id, r, h end
      at = i + INDEX_ENTRY_BYTES
    else
      at = i + 1
    end
  end
end

-- One more bucket: the one at `split` gives the entries whose next hash bit is 1 to the new one.
local function index_split(F, ix)
  local size = 2 ^ ix.level
  local from = ix.split
  local blob = bucket_get(F, from)
  local stay, move = {}, {}
  for at = 1, #blob, INDEX_ENTRY_BYTES do
    local entry = string.sub(blob, at, at + INDEX_ENTRY_BYTES - 1)
    local list = math.floor(read_be(entry, 1, 4) / size) % 2 == 1 and move or stay
    list[#list + 1] = entry
  end
  bucket_set(F, from, table.concat(stay))
  bucket_set(F, from + size, table.concat(move))
  ix.split = ix.split + 1
  if ix.split == size then ix.level, ix.split = ix.level + 1, 0 end
end

-- One bucket fewer: the last one's entries go back to the one it was split from.
local function index_merge(F, ix)
  if ix.split == 0 then
    ix.level = ix.level - 1
    ix.split = 2 ^ ix.level
  end
  ix.split = ix.split - 1
  local to = ix.split
  local from = to + 2 ^ ix.level
  bucket_set(F, to, bucket_get(F, to) .. bucket_get(F, from))
  bucket_set(F, from, '')
end

local function index_add(F, url, id, h)
  local ix = index_state(F)
  h = h or url_hash(url)
  local b = bucket_address(ix, h)
  bucket_set(F, b, bucket_get(F, b) .. be(h, 4) .. be(id, 5))
  ix.n, ix.dirty = ix.n + 1, true
  if ix.n > INDEX_SPLIT_LOAD * (2 ^ ix.level + ix.split) then index_split(F, ix) end
end

local function index_remove(F, url, id, h)
  local ix = index_state(F)
  h = h or url_hash(url)
  local b = bucket_address(ix, h)
  local blob, entry, at = bucket_get(F, b), be(h, 4) .. be(id, 5), 1
  while true do
    local i = string.find(blob, entry, at, true)
    if not i then error('seenstore: entry ' .. int(id) .. ' of ' .. F.pg .. ' is missing from its URL index') end
    if (i - 1) % INDEX_ENTRY_BYTES == 0 then
      bucket_set(F, b, string.sub(blob, 1, i - 1) .. string.sub(blob, i + INDEX_ENTRY_BYTES))
      break
    end
    at = i + 1
  end
  ix.n, ix.dirty = ix.n - 1, true
  local buckets = 2 ^ ix.level + ix.split
  if buckets > 1 and ix.n < INDEX_MERGE_LOAD * buckets then index_merge(F, ix) end
end

-- Everything the call changed, written: pages, FIFO chunks, index buckets and state, the count of
-- entries. What is written stays cached (a call may write back more than once).
local function write_back(F)
  local sets, dels = {}, {}
  for p, page in pairs(F.pages) do
    if page.dirty then
      local blob = page_encode(page)
      if blob then
        sets[#sets + 1], sets[#sets + 2] = int(p), blob
      else
        dels[#dels + 1] = int(p)
        F.pages[p] = page_new(page.where)
      end
      page.dirty = false
    end
  end
  hash_write(F.pg, sets, dels)
  sets, dels = {}, {}
  for field, chunk in pairs(F.chunks) do
    if chunk.dirty then
      if chunk.blob == nil then chunk.blob, chunk.ids = chunk_encode(chunk.ids), nil end
      if #chunk.blob > 0 then
        sets[#sets + 1], sets[#sets + 2] = field, chunk.blob
      else
        dels[#dels + 1] = field
      end
      chunk.dirty = false
    end
  end
  hash_write(F.fo, sets, dels)
  sets, dels = {}, {}
  for b, bucket in pairs(F.buckets) do
    if bucket.dirty then
      if #bucket.blob > 0 then sets[#sets + 1], sets[#sets + 2] = b, bucket.blob else dels[#dels + 1] = b end
      bucket.dirty = false
    end
  end
  hash_write(F.ux, sets, dels)
  local ix = F.ix
  if ix and ix.dirty then
    redis.call('HSET', F.counts, 'il', ix.level, 'is', ix.split, 'ix', ix.n)
    ix.dirty = false
  end
  if F.entries ~= 0 then
    redis.call('HINCRBY', F.counts, 'n', F.entries)
    F.entries = 0
  end
end

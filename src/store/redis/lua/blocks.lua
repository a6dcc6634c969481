-- A batch's view of the 64-byte blocks of its blocked filters (blocked and partitioned layouts,
-- where a URL's k bits in a filter lie in one block). The blocks a batch's URLs fall in are read
-- before any URL is decided, one GETRANGE per run of nearby blocks; the URLs' bits are tested and
-- set here, in order; the changed blocks are written back once every URL is decided, one SETRANGE
-- per run. A Redis call per URL, and its own record in the AOF for each write, cost more than the
-- rest of a URL's work (docs/redis.md "How an add works"); the function stays one atomic step, so
-- writing at its end instead of per URL changes nothing another caller can see. A filter much
-- larger than the batch's blocks (few runs would join) is read a block at a time when a URL first
-- needs it and written back a block at a time: sorting it into runs would cost more than it saves.

local BLOCK_BITS = 512
local BLOCK_BYTES = 64
-- Blocks at most this many apart share one read: copying up to 1 KiB between them costs less
-- than another call. Writes join closer blocks only, as every byte written is also a byte of the
-- AOF; a write run then lies within one read run (view_write).
local READ_GAP_BLOCKS = 16
local WRITE_GAP_BLOCKS = 4
-- A filter of more blocks than this per URL of the batch is read and written a block at a time.
local SPARSE_BLOCKS_PER_URL = 8

-- Sorted distinct block numbers, as runs {first, last} of blocks at most gap apart.
local function runs_of(sorted, gap)
  if #sorted == 0 then return {} end
  local runs, lo, hi = {}, sorted[1], sorted[1]
  for i = 2, #sorted do
    if sorted[i] - hi - 1 > gap then
      runs[#runs + 1] = {lo, hi}
      lo = sorted[i]
    end
    hi = sorted[i]
  end
  runs[#runs + 1] = {lo, hi}
  return runs
end

-- A filter whose blocks are read: the blocks that the positions of filter offset `offset` (in
-- positions) of the batch's n URLs fall in, read in runs. texts[r] is run r's bytes from block
-- starts[r]; run_of maps each such block to its run; dirty maps a changed block to its 64 bytes.
local function view_read(key, blob, n, per_url, offset)
  local run_of, list = {}, {}
  for i = 0, n - 1 do
    local first = u32(blob, (i * per_url + offset) * 4 + 1)
    local blk = (first - first % BLOCK_BITS) / BLOCK_BITS
    if not run_of[blk] then
      run_of[blk] = true
      list[#list + 1] = blk
    end
  end
  table.sort(list)
  local v, runs = {key = key, texts = {}, starts = {}, run_of = run_of, dirty = {}}, runs_of(list, READ_GAP_BLOCKS)
  for r, run in ipairs(runs) do
    v.texts[r] = redis.call('GETRANGE', key, run[1] * BLOCK_BYTES, (run[2] + 1) * BLOCK_BYTES - 1)
    v.starts[r] = run[1]
  end
  local r = 1
  for _, blk in ipairs(list) do
    while blk > runs[r][2] do r = r + 1 end
    run_of[blk] = r
  end
  return v
end

-- A filter whose blocks are read when a URL first needs them (view_fetch).
local function view_lazy(key)
  return {key = key, lazy = true, texts = {}, starts = {}, run_of = {}, dirty = {}}
end

-- Reads block blk of view v, a run of its own; its run's index. Every block a URL of the batch
-- falls in is read by view_read; a lazy view reads them here.
local function view_fetch(v, blk)
  local r = #v.texts + 1
  v.texts[r] = redis.call('GETRANGE', v.key, blk * BLOCK_BYTES, (blk + 1) * BLOCK_BYTES - 1)
  v.starts[r] = blk
  v.run_of[blk] = r
  return r
end

-- Filter f's view, nil for a classic filter.
local function view_of(b, f)
  if not b.blocked[f] then return nil end
  if b.geo.bytes[f] / BLOCK_BYTES > b.n * SPARSE_BLOCKS_PER_URL then return view_lazy(b.filters[f - 1]) end
  return view_read(b.filters[f - 1], b.blob, b.n, b.per_url, b.offsets[f])
end

-- The views of the filters of slices 1 .. have, by filter index.
local function views_read(b)
  local views = {}
  for f = 1, b.first[b.have] + b.count[b.have] - 1 do views[f] = view_of(b, f) end
  return views
end

-- Adds the views of slice s's filters, which the batch grew into: read as they are (a grown
-- filter is allocated as zeros, but one an interrupted import wrote may hold bits already).
local function views_grown(b, views, s)
  for f = b.first[s], b.first[s] + b.count[s] - 1 do views[f] = view_of(b, f) end
end

-- The bit of a byte that a bit offset names, by offset mod 8 (Redis numbers a byte's bits from
-- its most significant): tested and set with arithmetic, as Lua 5.1 has no bit operators and a
-- call of the bit module per bit cost more than the test.
local BIT = {[0] = 128, 64, 32, 16, 8, 4, 2, 1}

-- Whether the k bits whose positions start at blob byte p are all set in view v. The positions
-- are decoded inline (as u32 in common.lua): this is the loop every URL runs.
local function view_holds(v, blob, p, k)
  local byte_at = string.byte
  local a, b, c, d = byte_at(blob, p, p + 3)
  local first = a + b * 256 + c * 65536 + d * 16777216
  local base = first - first % BLOCK_BITS
  local blk = base / BLOCK_BITS
  local bytes, text, o = v.dirty[blk], nil, nil
  if bytes == nil then
    local r = v.run_of[blk]
    if r == nil then r = view_fetch(v, blk) end
    text, o = v.texts[r], (blk - v.starts[r]) * BLOCK_BYTES + 1
  end
  local q = first - base
  for j = 1, k do
    local m, byte = BIT[q % 8]
    if bytes then byte = bytes[(q - q % 8) / 8 + 1] else byte = byte_at(text, o + (q - q % 8) / 8) or 0 end
    if byte % (m + m) < m then return false end
    if j < k then
      p = p + 4
      a, b, c, d = byte_at(blob, p, p + 3)
      q = a + b * 256 + c * 65536 + d * 16777216 - base
    end
  end
  return true
end

-- Sets the k bits whose positions start at blob byte p in view v (written back by views_write).
local function view_set(v, blob, p, k)
  local byte_at = string.byte
  local first = u32(blob, p)
  local base = first - first % BLOCK_BITS
  local blk = base / BLOCK_BITS
  local bytes = v.dirty[blk]
  if bytes == nil then
    local r = v.run_of[blk] or view_fetch(v, blk)
    local o = (blk - v.starts[r]) * BLOCK_BYTES
    bytes = {byte_at(v.texts[r], o + 1, o + BLOCK_BYTES)}
    v.dirty[blk] = bytes
  end
  for _ = 1, k do
    local a, b, c, d = byte_at(blob, p, p + 3)
    local q = a + b * 256 + c * 65536 + d * 16777216 - base
    local i, m = (q - q % 8) / 8 + 1, BIT[q % 8]
    if bytes[i] % (m + m) < m then bytes[i] = bytes[i] + m end
    p = p + 4
  end
end

-- Blocks lo .. hi of view v as they were read (none of them changed). A write run lies within one
-- read run (the changed blocks are among the read ones, and writes join blocks closer than reads
-- do), so r is the run of the write run's first block.
local function unchanged(v, r, lo, hi)
  local o = (lo - v.starts[r]) * BLOCK_BYTES
  return string.sub(v.texts[r], o + 1, o + (hi - lo + 1) * BLOCK_BYTES)
end

-- Writes view v's changed blocks back, one SETRANGE per run (per block in a lazy view).
local function view_write(v)
  if v.lazy then
    for blk, bytes in pairs(v.dirty) do redis.call('SETRANGE', v.key, blk * BLOCK_BYTES, string.char(unpack(bytes))) end
    return
  end
  local list = {}
  for blk in pairs(v.dirty) do list[#list + 1] = blk end
  if #list == 0 then return end
  table.sort(list)
  for _, run in ipairs(runs_of(list, WRITE_GAP_BLOCKS)) do
    local r, parts, blk = v.run_of[run[1]], {}, run[1]
    while blk <= run[2] do
      local bytes = v.dirty[blk]
      if bytes then
        parts[#parts + 1] = string.char(unpack(bytes))
        blk = blk + 1
      else
        local stop = blk
        while v.dirty[stop + 1] == nil do stop = stop + 1 end
        parts[#parts + 1] = unchanged(v, r, blk, stop)
        blk = stop + 1
      end
    end
    redis.call('SETRANGE', v.key, run[1] * BLOCK_BYTES, table.concat(parts))
  end
end

local function views_write(views)
  for _, v in pairs(views) do view_write(v) end
end

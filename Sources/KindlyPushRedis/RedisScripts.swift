/// The Lua scripts of the workers (hiredis's way: `SCRIPT LOAD` once, then `EVALSHA`): each runs
/// atomically on the server, so what it reads and writes is one step of the worker's.
enum RedisScripts {
    /// Per entry: `XACK` it and, only when that acknowledged it (1), `XADD` its output, or for a
    /// dead letter its original `doc` (read here, on the server, so that the worker never holds an
    /// oversized one), the code, the message, the delivery count and the consumer.
    /// KEYS: input, output, dead-letter stream (the output when there is none); ARGV: group,
    /// consumer, then per entry id, kind (`o` output, `d` dead letter), output line or code,
    /// message, delivery count.
    static var commit: String {
        """
        local written = 0
        for i = 3, #ARGV, 5 do
          if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
            if ARGV[i + 1] == 'd' then
              local doc = ''
              local found = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
              if found[1] and found[1][2] then
                local fields = found[1][2]
                for j = 1, #fields, 2 do
                  if fields[j] == 'doc' then doc = fields[j + 1]; break end
                end
              end
              redis.call('XADD', KEYS[3], '*', 'doc', doc, 'in', ARGV[i], 'code', ARGV[i + 2], 'message', ARGV[i + 3],
                'deliveries', ARGV[i + 4], 'consumer', ARGV[2])
            else
              redis.call('XADD', KEYS[2], '*', 'doc', ARGV[i + 2], 'in', ARGV[i])
            end
            written = written + 1
          end
        end
        return written
        """
    }

    /// `redis-status --prune-idle`: removes the group's consumers idle longer than ARGV[2] ms with
    /// nothing pending (`XGROUP DELCONSUMER`, which would drop a consumer's pending entries: the
    /// check and the removal are one step here). KEYS: stream; ARGV: group, idle. Answer: the names.
    static var prune: String {
        """
        local removed = {}
        for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
          local name, pending, idle
          for i = 1, #consumer, 2 do
            if consumer[i] == 'name' then name = consumer[i + 1]
            elseif consumer[i] == 'pending' then pending = consumer[i + 1]
            elseif consumer[i] == 'idle' then idle = consumer[i + 1] end
          end
          if name and pending == 0 and idle and idle > tonumber(ARGV[2]) then
            redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], name)
            removed[#removed + 1] = name
          end
        end
        return removed
        """
    }

    /// `dead-letter replay`: per id, the dead letter's original `doc` added to the input stream
    /// (with `replayed_from`, the dead letter's id) and the dead letter deleted, in one step: a
    /// replay killed and run again moves each entry once. KEYS: dead-letter stream, input
    /// stream; ARGV: the ids. Answer: `[[dead-letter id, new id], ...]` for those moved (an id not
    /// in the stream, or without a `doc`, is not).
    static var replay: String {
        """
        local moved = {}
        for i = 1, #ARGV do
          local found = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
          if found[1] then
            local fields, doc = found[1][2], nil
            for j = 1, #fields, 2 do
              if fields[j] == 'doc' then doc = fields[j + 1]; break end
            end
            if doc then
              local id = redis.call('XADD', KEYS[2], '*', 'doc', doc, 'replayed_from', ARGV[i])
              redis.call('XDEL', KEYS[1], ARGV[i])
              moved[#moved + 1] = {ARGV[i], id}
            end
          end
        end
        return moved
        """
    }

    /// Reads new entries (`XREADGROUP ... >`) or takes over idle ones (`XAUTOCLAIM`, then their
    /// delivery counts from `XPENDING`) on the server, and answers per entry only what the worker
    /// may hold: `[id, deliveries, doc fields, doc]`, the doc replaced by its length when over the
    /// limit and by "" when the entry was delivered more than --max-deliveries times (counted
    /// before its body is read) or has not exactly one `doc` (-1: deleted). So no reply is larger
    /// than a batch of documents of the limit. New entries are read
    /// one at a time, and no more once what was read reaches a batch of documents of the limit:
    /// the script's work is bounded too (a batch of 50 MB entries read at once took the server
    /// longer than the worker waits for a reply, and each lost reply counted a delivery).
    /// KEYS: input; ARGV: group, consumer, count, limit, max deliveries, idle ("" for new
    /// entries), cursor. Answer: `[cursor, entries]`.
    static var read: String {
        """
        local entries, cursor = {}, ''
        if ARGV[6] == '' then
          local budget, read = tonumber(ARGV[3]) * (tonumber(ARGV[4]) + 1024), 0
          for _ = 1, tonumber(ARGV[3]) do
            local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
            if not (r and r[1] and r[1][2][1]) then break end
            local entry = r[1][2][1]
            entries[#entries + 1] = entry
            for j = 2, #entry[2], 2 do read = read + #entry[2][j] end
            if read >= budget then break end
          end
        else
          local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[6], ARGV[7], 'COUNT', ARGV[3])
          cursor = r[1]
          entries = r[2]
        end
        local counts = {}
        if ARGV[6] ~= '' and #entries > 0 then
          local p = redis.call('XPENDING', KEYS[1], ARGV[1], entries[1][1], entries[#entries][1], #entries, ARGV[2])
          for _, item in ipairs(p) do counts[item[1]] = item[4] end
        end
        local limit, most = tonumber(ARGV[4]), tonumber(ARGV[5])
        local out = {}
        for _, entry in ipairs(entries) do
          local id, fields = entry[1], entry[2]
          local docs, doc = 0, false
          if fields then
            for j = 1, #fields, 2 do
              if fields[j] == 'doc' then
                docs = docs + 1
                if not doc then doc = fields[j + 1] end
              end
            end
          else
            docs = -1
          end
          local deliveries = counts[id] or 1
          local body = ''
          if deliveries <= most and docs == 1 then
            if #doc > limit then body = #doc else body = doc end
          end
          out[#out + 1] = {id, deliveries, docs, body}
        end
        return {cursor, out}
        """
    }

    /// KEYS: input; ARGV: group. Answer: `[pending, lag]` of that group (lag -1 when Redis does
    /// not know it), or `[]` when there is no such group.
    static var groupFigures: String {
        """
        for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
          local name, pending, lag = nil, 0, -1
          for i = 1, #g, 2 do
            if g[i] == 'name' then name = g[i + 1]
            elseif g[i] == 'pending' then pending = g[i + 1]
            elseif g[i] == 'lag' and g[i + 1] then lag = g[i + 1] end
          end
          if name == ARGV[1] then return {pending, lag} end
        end
        return {}
        """
    }
}

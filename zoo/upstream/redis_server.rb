# Shared by the redlock_*.rb evidence scripts (run by hand, see each).

# Starts a redis-server on `port` with an append-only file (fsync always, no
# RDB snapshots), its data and log in `dir`; returns its pid once it answers
# PING.
def start_redis(port, dir)
  Dir.mkdir(dir) unless Dir.exist?(dir)
  log = File.join(dir, "redis.log")
  pid = spawn("redis-server", "--port", port.to_s, "--dir", dir, "--appendonly", "yes",
              "--appendfsync", "always", "--save", "", out: log, err: log)
  50.times { break if system("redis-cli -p #{port} ping >/dev/null 2>&1"); sleep 0.05 }
  pid
end

# What the block returned, or what it raised: the error's class and the
# lines after the first of its message (redlock-rb's LockAcquisitionError
# lists each instance's error there).
def outcome
  yield.inspect
rescue => e
  "raised #{e.class}: #{e.message.lines[1..].join(' | ').strip}"
end

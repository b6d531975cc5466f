# What redlock-rb sends to a fresh and to a restarted Redis instance: the
# upstream library itself, watched through the instance's MONITOR. Evidence
# for `fenced_zoo::redlock`'s script cache (zoo/src/redlock/mod.rs, "The
# script cache"); not a test (CI has no Ruby gems): run by hand, as
# redlock_restart.rb is.
#
#   apt-get install ruby ruby-connection-pool redis-server
#   git clone https://github.com/redis-rb/redis-client        # 0.30.0, 9298077
#   git clone https://github.com/leandromoreira/redlock-rb    # 2.0.6, f176e57
#   ruby -I redis-client/lib -I redlock-rb/lib zoo/upstream/redlock_noscript.rb
#
# Measured 2026-12-05 (Redis 7.0.15, Ruby 3.1.2; a SIGKILL and a start over
# the append-only file between the parts; MONITOR's lines, UUIDs, SHAs and
# script bodies cut short, the scripts' own commands in brackets):
#
#   fresh instance, first lock (client a):
#     "HELLO" "3"
#     "EVALSHA" "<lock>" "1" "res" "<v>" "10000" "yes"      (NOSCRIPT: not run)
#     "SCRIPT" "LOAD" "<unlock script>"
#     "SCRIPT" "LOAD" "<lock script>"
#     "SCRIPT" "LOAD" "<pttl script>"
#     "EVALSHA" "<lock>" "1" "res" "<v>" "10000" "yes"      [exists, set PX]
#     -> {:validity=>9896, ...}
#   second client b, first lock (the cache is the instance's):
#     "HELLO" "3"
#     "EVALSHA" "<lock>" ... [exists, get]; "EVALSHA" "<unlock>" ... [get]
#     -> false
#   key after restart: the value (the AOF)
#   after the restart, two extends by a:
#     extend 1 -> raised LockAcquisitionError: ConnectionError: EOFError
#       (the call on the socket the kill reset), and its failure path's
#       unlock connects anew:
#     "HELLO" "3"
#     "EVALSHA" "<unlock>" "1" "res" "<v>"                  (NOSCRIPT: not run)
#     "SCRIPT" "LOAD" x 3, in the same order
#     "EVALSHA" "<unlock>" "1" "res" "<v>"                  [get, del]
#     extend 2 -> {:validity=>9898, ...}
#     "EVALSHA" "<lock>" ... [exists, set PX]
#
# So: the cache starts empty and a restart empties it (Redis 7 persists no
# scripts), the reload is load_scripts' three SCRIPT LOADs in order and the
# EVALSHA again on the same connection, and one client's reload serves the
# others — as `fenced_zoo::redlock` models it (its durable-restart story:
# `scenarios/redlock-restart-durable`).

require "redis-client"
require "redlock"
require_relative "redis_server"
PORT = 7703
DATA = ENV.fetch("REDLOCK_NOSCRIPT_DIR", "/tmp/redlock-noscript")
# Every command the instance receives while the block runs, as MONITOR
# prints it (MONITOR's own reply and command left out).
def watched
  log = IO.popen(["redis-cli", "-p", PORT.to_s, "monitor"])
  sleep 0.2
  yield
  sleep 0.2
  Process.kill("TERM", log.pid)
  log.read.lines.map { |line| line.split("] ", 2).last.strip[0, 110] }
     .reject { |line| line == "OK" || line.start_with?("\"monitor\"") }
end
pid = start_redis(PORT, DATA)
system("redis-cli -p #{PORT} script flush >/dev/null")
a = Redlock::Client.new(["redis://127.0.0.1:#{PORT}"], redis_timeout: 0.1, retry_count: 0)
b = Redlock::Client.new(["redis://127.0.0.1:#{PORT}"], redis_timeout: 0.1, retry_count: 0)
# Prints `title`, the commands the instance received while the block ran,
# and what each call of the block returned.
def show(title)
  results = []
  commands = watched { yield results }
  puts title, commands.map { |line| "  #{line}" }, results.map { |r| "  -> #{r}" }
end
info = nil
show("fresh instance, first lock (client a):") { |r| r << (info = a.lock("res", 10_000)).inspect }
show("second client b, first lock:") { |r| r << outcome { b.lock("res", 10_000) } }
Process.kill("KILL", pid); Process.wait(pid)
pid = start_redis(PORT, DATA)
puts "key after restart: #{`redis-cli -p #{PORT} get res`.strip.inspect}"
show("after the restart, two extends by a:") do |r|
  2.times { r << outcome { a.lock("res", 10_000, extend: info) } }
end
Process.kill("TERM", pid); Process.wait(pid)

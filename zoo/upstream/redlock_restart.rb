# What redlock-rb does when a Redis instance restarts under it: the upstream
# library itself, not a model of it. Evidence for `fenced_zoo::redlock`'s
# connections (zoo/src/redlock/mod.rs, "Connections"); not a test (CI has no
# Ruby gems): run by hand.
#
#   apt-get install ruby ruby-connection-pool redis-server
#   git clone https://github.com/redis-rb/redis-client        # 0.30.0, 9298077
#   git clone https://github.com/leandromoreira/redlock-rb    # 2.0.6, f176e57
#   ruby -I redis-client/lib -I redlock-rb/lib zoo/upstream/redlock_restart.rb KILL
#
# Measured 2026-12-05 (Redis 7.0.15, Ruby 3.1.2, SIGKILL and a start over its
# append-only file):
#
#   lock: {:validity=>9895, :resource=>"res", :value=>"abce4676-..."}
#   key after restart: "abce4676-..."
#   extend after restart, 1st call (2.4 ms): raised Redlock::LockAcquisitionError: RedisClient::ConnectionError: EOFError
#   extend after restart, 2nd call (0.4 ms): {:validity=>9897, ...}
#   extend while down, on the reset socket (0.6 ms): raised ... RedisClient::ConnectionError: EOFError
#   extend while down, next call (connect) (0.5 ms): raised ... RedisClient::CannotConnectError: Connection refused
#
# So: the first call on a connection the instance's death reset fails at once
# (EOF), with no retry (`reconnect_attempts: false`, redis-client's default,
# which redlock-rb's `RedisClient.config(url:, timeout:)` keeps); the next call
# connects anew; a connect while the instance is down is refused at once.

require "redis-client"
require "redlock"
require_relative "redis_server"
PORT = 7702
DATA = ENV.fetch("REDLOCK_RESTART_DIR", "/tmp/redlock-restart")
def report(what, &call)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  r = outcome(&call)
  puts "#{what} (#{((Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) * 1000).round(1)} ms): #{r}"
end
pid = start_redis(PORT, DATA)
client = Redlock::Client.new(["redis://127.0.0.1:#{PORT}"], redis_timeout: 0.1, retry_count: 0)
info = client.lock("res", 10_000)
puts "lock: #{info.inspect}"
Process.kill(ARGV[0] || "TERM", pid); Process.wait(pid)
pid = start_redis(PORT, DATA)
puts "key after restart: #{`redis-cli -p #{PORT} get res`.strip.inspect}"
report("extend after restart, 1st call") { client.lock("res", 10_000, extend: info) }
report("extend after restart, 2nd call") { client.lock("res", 10_000, extend: info) }
Process.kill(ARGV[0] || "TERM", pid); Process.wait(pid)
report("extend while down, on the reset socket") { client.lock("res", 10_000, extend: info) }
report("extend while down, next call (connect)") { client.lock("res", 10_000, extend: info) }

# frozen_string_literal: true

# dalli.rb - the memcached plan of tests/integration/test_memcache_clients.py
# (tests/nctest/mcplan.py describes it) run by Dalli: Debian 12's ruby-dalli, 3.0.6 (pinned by
# scripts/lib/deps.sh), whose only protocol is the binary one (Dalli::Protocol::Binary; later 3.x
# versions added the meta protocol). Raw values are set with raw: true on a client with
# compress: false (Dalli 3.0 compresses values over 4 KB by default), so they are the bytes with
# flags 0 that the other clients read; the typed step uses Dalli's default serializer, Marshal
# (flag 1). Dalli does not show the flags.
#
# Usage: ruby dalli.rb '<plan JSON>' (a plan, or a cross-protocol plan: {"write", "read"}).
# Prints one JSON line, what it saw, and exits 0; or prints {"error", "step"} and exits 1.
require 'json'
require 'digest'
require 'logger'
require 'dalli'

Dalli.logger = Logger.new($stderr) # stdout is for the result
$step = 'start'

# mcplan.value_of: binary, byte j = (seed + 151 j) mod 256; text, letters from the seed on
def value_of(key, size, kind)
  seed = key.bytes.sum % 251
  bytes = Array.new(size) { |j| kind == 'binary' ? (seed + 151 * j) % 256 : 97 + (seed + j) % 26 }
  bytes.pack('C*')
end

def digest(value)
  value.nil? ? nil : [value.bytesize, Digest::SHA1.hexdigest(value)]
end

def client(plan)
  Dalli::Client.new("#{plan['host']}:#{plan['port']}",
                    compress: false, socket_timeout: plan['timeout'], socket_max_failures: 1)
end

def step(out, name)
  $step = name
  yield
  out['steps'] << name
end

def header
  { 'client' => 'dalli', 'version' => Dalli::VERSION, 'protocol' => 'binary' }
end

def run_plan(plan)
  c = client(plan)
  out = header.merge('steps' => [])
  raw = { raw: true }
  step(out, 'set') do
    out['set'] = plan['values'].map { |k, size, kind| !!c.set(k, value_of(k, size, kind), 0, raw) }
  end
  keys = plan['values'].map(&:first) + plan['missing']
  step(out, 'get') { out['get'] = keys.to_h { |k| [k, digest(c.get(k))] } }
  step(out, 'multi-get') do
    got = c.get_multi(*keys)
    out['multi'] = keys.to_h { |k| [k, digest(got[k])] }
    out['multi_call'] = 'get_multi'
  end
  step(out, 'delete') do
    k = plan['delete']
    c.set(k, 'x', 0, raw)
    out['delete'] = [!!c.delete(k), digest(c.get(k)), !!c.delete(k)]
  end
  step(out, 'incr/decr') do
    counter = plan['counter']
    c.set(counter['key'], counter['start'], 0, raw)
    out['counter'] = counter['ops'].map do |op, n|
      op == 'incr' ? c.incr(counter['key'], n) : c.decr(counter['key'], n)
    end
    out['counter_missing'] = c.incr(plan['counter_missing'], 1)
  end
  step(out, 'cas') do
    k = plan['cas']['key']
    first, second, third = plan['cas']['values']
    c.set(k, first, 0, raw)
    _, token = c.get_cas(k)
    ok = c.set_cas(k, second, token, 0, raw)
    stale = c.set_cas(k, third, token, 0, raw)
    out['cas'] = [!!ok, !!stale, c.get(k)]
  end
  step(out, 'ttl') do
    t = plan['ttl']
    set_ok = c.set(t['set'], 't', t['ttl'], raw) && c.set(t['touch'], 't', t['ttl'], raw)
    out['ttl'] = [!!set_ok, !!c.touch(t['touch'], t['touched']),
                  !!c.touch(plan['missing'][0], t['touched'])]
  end
  step(out, 'typed') do
    plan['typed'].each_value { |key, value| c.set(key, value) }
    out['typed'] = plan['typed'].transform_values { |key, _| c.get(key) }
  end
  c.close
  out
end

def run_cross(plan)
  c = client(plan)
  out = header
  $step = 'write'
  out['wrote'] = plan['write'].map do |k, size, kind|
    !!c.set(k, value_of(k, size, kind), 0, raw: true)
  end
  $step = 'read'
  out['read'] = plan['read'].to_h do |k|
    v = c.get(k)
    [k, v.nil? ? nil : digest(v) + [nil]]
  end
  c.close
  out
end

begin
  plan = JSON.parse(ARGV.fetch(0))
  puts JSON.generate(plan.key?('write') ? run_cross(plan) : run_plan(plan))
rescue StandardError => e
  trace = (e.backtrace || []).first(5).join("\n")
  puts JSON.generate('error' => "#{e.class}: #{e.message}\n#{trace}", 'step' => $step)
  exit 1
end

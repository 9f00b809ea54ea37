#!/usr/bin/env python3
"""Bantam's overhead next to the model's own time: run by hand, prints a table.

    python3 tests/bench.py           # the full run (about a minute)
    python3 tests/bench.py --quick   # fewer runs and smaller sizes (what the unit suite checks)

Every figure is a median of several runs against the fake server in this process, and where it
has a baseline (a 15-line stdlib client making the same streamed request), a ratio to it.
"""
import json
import os
import platform
import pty
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_server import FakeServer, chunk, sse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BANTAM = os.path.join(ROOT, 'bantam.py')
BASELINE = '''import json, sys, urllib.request
url, prompt = sys.argv[1], open(sys.argv[2]).read()
body = {'model': 'm', 'stream': True, 'messages': [{'role': 'user', 'content': prompt}]}
request = urllib.request.Request(url + '/chat/completions', json.dumps(body).encode(),
                                 {'Content-Type': 'application/json'})
with urllib.request.urlopen(request, timeout=60) as response:
    for line in response:
        if not line.startswith(b'data: ') or line.startswith(b'data: [DONE]'):
            continue
        for choice in json.loads(line[6:])['choices']:
            text = choice['delta'].get('content')
            if text:
                sys.stdout.write(text)
                sys.stdout.flush()
sys.stdout.write('\\n')
'''


FIVE_MB = 'head -c 5000000 /dev/zero | tr "\\0" x'


def stream(pieces):
    """Raw SSE bytes for a text reply made of these pieces."""
    events = [sse(chunk({'role': 'assistant', 'content': ''}))]
    events += [sse(chunk({'content': piece})) for piece in pieces]
    return b''.join(events + [sse(chunk({}, 'stop')), b'data: [DONE]\n\n'])


class Bench:
    def __init__(self, quick):
        self.quick, self.rows = quick, []
        self.dir = tempfile.mkdtemp(prefix='bantam-bench-')
        self.server = FakeServer()
        os.makedirs(os.path.join(self.dir, '.bantam'))  # the user's own settings (HOME below)
        with open(os.path.join(self.dir, '.bantam', 'model.cfg'), 'w') as f:
            f.write('endpoint=%s\nmodel=bench\ncolor=never\nmax_al_iterations=100000\n'
                    % self.server.url)
        self.prompt = os.path.join(self.dir, 'prompt.txt')
        with open(self.prompt, 'w') as f:
            f.write('Say one word.')
        self.baseline = os.path.join(self.dir, 'baseline.py')
        with open(self.baseline, 'w') as f:
            f.write(BASELINE)
        self.env = dict({k: v for k, v in os.environ.items() if not k.startswith('BANTAM_')},
                        HOME=self.dir)

    def close(self):
        self.server.close()
        shutil.rmtree(self.dir, True)

    def row(self, name, value, unit, baseline=None, goal='', ok=None):
        self.rows.append((name, value, unit, baseline, goal, ok))
        ratio = '%.2fx' % (value / baseline) if baseline else ''
        base = '%.1f %s' % (baseline, unit) if baseline else ''
        mark = '' if ok is None else ('ok' if ok else 'MISSED')
        print('%-44s %10.1f %-5s %12s %7s  %-22s %s' % (name, value, unit, base, ratio, goal,
                                                         mark), flush=True)

    def argv(self, who):
        if who == 'bantam':
            return [sys.executable, BANTAM, self.prompt]
        return [sys.executable, self.baseline, self.server.url, self.prompt]

    def timed(self, who, raw, out=subprocess.DEVNULL):
        """Wall seconds of one run of `who` against a reply of raw SSE bytes."""
        self.server.replies.append({'raw': raw})
        start = time.perf_counter()
        subprocess.run(self.argv(who), cwd=self.dir, env=self.env, stdout=out,
                       stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    def on_pty(self, who, raw, marker=None):
        """Run on a pseudo-terminal; return (wall seconds, seconds from the server's first chunk
        to `marker` appearing on the terminal)."""
        sent = {}

        def reply(body):
            sent['first'] = time.perf_counter()  # the server writes at once after this
            return {'raw': raw}

        self.server.replies.append(reply)
        master, slave = pty.openpty()
        start = time.perf_counter()
        proc = subprocess.Popen(self.argv(who), cwd=self.dir, env=self.env, stdin=slave,
                                stdout=slave, stderr=slave)
        os.close(slave)
        seen, data = None, b''
        while True:
            try:
                block = os.read(master, 65536)
            except OSError:
                break
            if not block:
                break
            data += block
            if marker and seen is None and marker in data:
                seen = time.perf_counter()
        proc.wait()
        os.close(master)
        wall = time.perf_counter() - start
        return wall, (seen - sent['first']) if seen and 'first' in sent else None

    def startup(self):
        runs = 5 if self.quick else 21
        raw = stream(['Hello.'])
        for who in ('baseline', 'bantam'):
            self.timed(who, raw)  # warm the page cache
        base = statistics.median(self.timed('baseline', raw) for _ in range(runs))
        mine = statistics.median(self.timed('bantam', raw) for _ in range(runs))
        self.row('1. start-up, one-word reply (wall)', mine * 1000, 'ms', base * 1000,
                 '<= 1.15x baseline', mine <= 1.15 * base)

    def throughput(self):
        count, runs = (2000, 3) if self.quick else (20000, 5)
        raw = stream(['tok%d ' % i for i in range(count)])
        for label, how in (('pipe', 'pipe'), ('pty', 'pty')):
            result = {}
            for who in ('baseline', 'bantam'):
                if how == 'pipe':
                    walls = [self.timed(who, raw, subprocess.PIPE) for _ in range(runs)]
                else:
                    walls = [self.on_pty(who, raw)[0] for _ in range(runs)]
                result[who] = count / statistics.median(walls)
            ok = result['bantam'] >= 0.9 * result['baseline']
            self.row('2. stream %d chunks to a %s (chunks/s)' % (count, label),
                     result['bantam'], '/s', result['baseline'], '>= 0.9x baseline', ok)

    def first_token(self):
        runs = 5 if self.quick else 15
        raw = stream(['FIRSTTOKEN', ' and the rest'])
        delays = {}
        for who in ('baseline', 'bantam'):
            values = [self.on_pty(who, raw, b'FIRSTTOKEN')[1] for _ in range(runs)]
            delays[who] = statistics.median(v for v in values if v is not None) * 1000
        self.row('3. first token: server write to terminal', delays['bantam'], 'ms',
                 delays['baseline'], '< 5 ms over baseline',
                 delays['bantam'] - delays['baseline'] < 5)

    def loop(self):
        rounds = 40 if self.quick else 200
        # `true` with a different comment each round: the same call again would not run.
        calls = [{'calls': [('shell_exec', {'command': 'true # %d' % i})]} for i in range(rounds)]
        self.server.requests.clear()
        self.server.replies.extend(calls + [{'text': 'done'}])
        subprocess.run(self.argv('bantam'), cwd=self.dir, env=self.env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times = [r['time'] for r in self.server.requests]
        gaps = [b - a for a, b in zip(times, times[1:])]
        spawn = statistics.median(self.spawn_true() for _ in range(25))
        first, last = gaps[:rounds // 4], gaps[-(rounds // 4):]
        over = (statistics.median(gaps) - spawn) * 1000
        self.row('4. tool round of `true`, minus its spawn', over, 'ms', None, '< 2 ms', over < 2)
        self.row('   rounds 1-%d (whole round)' % (rounds // 4), statistics.median(first) * 1000,
                 'ms')
        self.row('   rounds %d-%d (whole round)' % (rounds - rounds // 4 + 1, rounds),
                 statistics.median(last) * 1000, 'ms')
        self.row('   spawning `bash -c true` directly', spawn * 1000, 'ms')

    @staticmethod
    def spawn_true():
        start = time.perf_counter()
        subprocess.run(['bash', '-c', 'true'], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start

    def reasoning(self):
        # The same words streamed as reasoning and as text: reasoning is kept as a field of the
        # reply (joined piece by piece), text as the reply's words (issue 50 row 1).
        for count, runs in ((6000, 3), (15000, 1)) if self.quick else ((60000, 3), (150000, 1)):
            words = ['tok%d ' % i for i in range(count)]
            as_text = stream(words)
            events = [sse(chunk({'role': 'assistant', 'content': ''}))]
            events += [sse(chunk({'reasoning_content': piece})) for piece in words]
            events += [sse(chunk({'content': 'ok'}, 'stop')), b'data: [DONE]\n\n']
            as_reasoning = b''.join(events)
            text = min(self.timed('bantam', as_text, subprocess.PIPE) for _ in range(runs))
            thought = min(self.timed('bantam', as_reasoning, subprocess.PIPE) for _ in range(runs))
            self.row('7. %d reasoning pieces (wall)' % count, thought * 1000, 'ms', text * 1000,
                     '<= 1.2x the same words', thought <= 1.2 * text)

    def listing(self):
        # /list over three big sessions, against three small ones: time and peak memory should
        # not grow with what the sessions hold (issue 50 row 4).
        size = 2 if self.quick else 80
        probe = ('import resource, subprocess, sys\n'
                 'subprocess.run(sys.argv[1:], input=b"/list\\n", stdout=subprocess.DEVNULL, '
                 'stderr=subprocess.DEVNULL)\n'
                 'print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)')
        result = {}
        for label, megabytes in (('small', 0), ('big', size)):
            folder = os.path.join(self.dir, '.bantam', 'sessions')
            shutil.rmtree(folder, True)
            os.makedirs(folder)
            message = {'role': 'user', 'content': 'x' * 1000000}
            for i in range(3):
                with open(os.path.join(folder, 'session%d.json' % i), 'w') as f:
                    json.dump({'time': 'then', 'summary': 'one', 'messages':
                               [message] * megabytes + [{'role': 'user', 'content': 'hi'}]}, f)
            start = time.perf_counter()
            out = subprocess.run([sys.executable, '-c', probe, sys.executable, BANTAM],
                                 cwd=self.dir, env=self.env, capture_output=True, text=True)
            result[label] = (time.perf_counter() - start, int(out.stdout) / 1024)
        shutil.rmtree(os.path.join(self.dir, '.bantam', 'sessions'), True)
        (small, small_rss), (big, big_rss) = result['small'], result['big']
        self.row('8. /list over three %d MB sessions (wall)' % size, big * 1000, 'ms',
                 small * 1000, '<= 1.2x small sessions', big <= 1.2 * small)
        self.row('   its peak RSS', big_rss, 'MB', small_rss, '<= 1.2x small sessions',
                 big_rss <= 1.2 * small_rss)

    def nested(self):
        # A reply whose text holds many nested half-objects, against flat text of the same size:
        # the search for a call written as text should take time in proportion (issue 50 row 5).
        depth = 300 if self.quick else 900
        half = '{"a": ' * depth
        flat = 'a' * len(half)
        times = {}
        for label, text in (('flat', flat), ('nested', half)):
            times[label] = min(self.timed('bantam', stream([text])) for _ in range(3))
        self.row('9. a reply of %d nested half-objects (wall)' % depth, times['nested'] * 1000,
                 'ms', times['flat'] * 1000, '<= 1.5x flat text', times['nested'] <= 1.5 *
                 times['flat'])

    def cleaning(self):
        # clean() on 1 MB of output with a little non-ASCII, against a compiled pattern that
        # removes the same characters (issue 50 row 2); in this process, on the module itself.
        import importlib.util
        import re
        spec = importlib.util.spec_from_file_location('bantam', BANTAM)
        bantam = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bantam)
        cfg = dict(bantam.DEFAULTS)
        text = ('plain ascii output line, caf\u00e9 \u200b\x1b[31m\n' * 25000)[:1000000]
        pattern = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u200b-\u200f\u202a-\u202e'
                             '\u2060-\u2064\u2066-\u206f\ufeff]')
        assert bantam.clean(cfg, text) == pattern.sub('', text)
        mine = min(self.clock(lambda: bantam.clean(cfg, text)) for _ in range(3))
        base = min(self.clock(lambda: pattern.sub('', text)) for _ in range(3))
        self.row('10. cleaning 1 MB of output', mine * 1000, 'ms', base * 1000,
                 "<= 2x a compiled pattern", mine <= 2 * base)

    def saving(self):
        # save_session on a big conversation (issue 60 row 3), against writing the same JSON
        # twice as a plain save would; in this process, on the module itself.
        import importlib.util
        spec = importlib.util.spec_from_file_location('bantam', BANTAM)
        bantam = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bantam)
        bantam.SESSIONS = os.path.join(self.dir, 'bench-sessions')
        cfg = dict(bantam.DEFAULTS, api_key='sk-bench-' + 'k' * 40)
        size = 2 if self.quick else 40
        messages = [{'role': 'system', 'content': 'big'}] + [
            {'role': 'user', 'content': 'line of a long log, caf\u00e9\n' * 40000}] * size

        def plain():
            text = json.dumps(dict(time='now', summary='big', messages=messages))
            for name in ('plain-a', 'plain-b'):
                with open(os.path.join(self.dir, name), 'w') as f:
                    f.write(text)
        mine = min(self.clock(lambda: bantam.save_session(cfg, messages, None)) for _ in range(2))
        base = min(self.clock(plain) for _ in range(2))
        self.row('11. saving a %d MB session' % size, mine * 1000, 'ms', base * 1000,
                 '<= 2x a plain write', mine <= 2 * base)

    @staticmethod
    def clock(work):
        start = time.perf_counter()
        work()
        return time.perf_counter() - start

    def prompt_cost(self):
        self.server.requests.clear()
        self.timed('bantam', stream(['ok']))
        body = self.server.requests[0]['body']
        tools = len(json.dumps(body['tools']).encode())
        system = len(body['messages'][0]['content'].encode())
        self.row('5. tools JSON in the first request', tools, 'B', None, '< 700 B', tools < 700)
        self.row('   system prompt (system.txt)', system, 'B', None, '< 2000 B', system < 2000)

    def memory(self):
        probe = ('import resource, subprocess, sys\n'
                 'subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, '
                 'stderr=subprocess.DEVNULL)\n'
                 'print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)')
        for label, replies in (
                ('one-shot run', [{'text': 'ok'}]),
                ('run with a 5 MB tool output', [
                    {'calls': [('shell_exec', {'command': FIVE_MB})]},
                    {'text': 'ok'}])):
            peaks = []
            for _ in range(3):
                self.server.replies.extend(replies)
                out = subprocess.run([sys.executable, '-c', probe] + self.argv('bantam'),
                                     cwd=self.dir, env=self.env, capture_output=True, text=True)
                peaks.append(int(out.stdout) / 1024)
            peak = statistics.median(peaks)
            self.row('6. peak RSS, %s' % label, peak, 'MB', None, '< 30 MB', peak < 30)


def main():
    quick = '--quick' in sys.argv
    print('Bantam benchmark%s: Python %s on %s, %d cores; %s' % (
        ' (quick)' if quick else '', platform.python_version(), platform.machine(),
        os.cpu_count(), time.strftime('%Y-%m-%d')))
    print('%-44s %10s %-5s %12s %7s  %-22s' % ('measure', 'bantam', '', 'baseline', 'ratio',
                                              'goal'))
    bench = Bench(quick)
    try:
        for step in (bench.startup, bench.throughput, bench.first_token, bench.loop,
                     bench.prompt_cost, bench.memory, bench.reasoning, bench.listing,
                     bench.nested, bench.cleaning, bench.saving):
            step()
    finally:
        bench.close()
    missed = [r[0] for r in bench.rows if r[5] is False]
    print('all goals met' if not missed else 'missed: ' + '; '.join(m.strip() for m in missed))


if __name__ == '__main__':
    main()

"""Shared test helpers: a scratch home and working directory, a fake server, and ways to run
bantam.py as users do (one-shot as a subprocess, the REPL on a pseudo-terminal).

Every test launches BANTAM_CMD (a command line; default: this Python running the repository's
bantam.py), so the same suite checks a port of Bantam to another language. Tests about the Python
file itself are marked python_only and are skipped under a foreign command."""
import fcntl
import functools
import json
import os
import pty
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unittest

from fake_server import FakeServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BANTAM = os.path.join(ROOT, 'bantam.py')
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
ANSI = re.compile(r'\x1b\[[0-9;]*m')
# Words of BANTAM_CMD that name files are taken from where the suite was started.
CMD = [os.path.abspath(word) if os.path.isfile(word) else word
       for word in shlex.split(os.environ.get('BANTAM_CMD') or '')] or [sys.executable, BANTAM]
FOREIGN = os.path.realpath(CMD[-1]) != os.path.realpath(BANTAM)
python_only = unittest.skipIf(FOREIGN, 'about the Python bantam.py itself (BANTAM_CMD is set)')


def waiting(test):
    """A row that waits for lines (README "Known limits"). The test asserts the right behaviour. On
    this repository's bantam.py it is an expected failure, so the run turns red the day the row
    is built and the mark must come off. Under BANTAM_CMD a port that does the right thing passes,
    and one that behaves like today's build is skipped: a port never copies a waiting row's
    failure, and is never red for doing better."""
    if not FOREIGN:
        return unittest.expectedFailure(test)

    @functools.wraps(test)
    def run(self):
        try:
            test(self)
        except AssertionError as e:
            raise unittest.SkipTest('waits in this port too: %s' % str(e)[:200])
    return run


def wait_until(predicate, timeout=20, step=0.02):
    """Poll predicate until it is true or the deadline passes; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def read(path):
    """A file's text, or '' when there is none."""
    if not os.path.exists(path):
        return ''
    with open(path) as f:
        return f.read()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open('/proc/%d/stat' % pid) as f:  # a zombie is dead too
        return f.read().split(')')[-1].split()[0] != 'Z'


class BantamCase(unittest.TestCase):
    """Each test gets its own HOME and working directory, a fake server, and the user's own
    settings in $HOME/.bantam/model.cfg (the only place besides bantam.py's own folder)."""

    replies = ()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='bantam-test-')
        self.home = os.path.join(self.dir, 'home')
        self.cwd = os.path.join(self.dir, 'work')
        os.makedirs(self.home)
        os.makedirs(self.cwd)
        self.server = FakeServer(self.replies)
        self.addCleanup(self.server.close)
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.config(stream='true', color='never', timeout=10, shell_timeout=20)

    def user_file(self, name):
        """The path of a file of the user's own settings folder, ~/.bantam (made when missing)."""
        os.makedirs(os.path.join(self.home, '.bantam'), exist_ok=True)
        return os.path.join(self.home, '.bantam', name)

    def config(self, **settings):
        """Write the user's model.cfg: the fake endpoint plus these settings."""
        lines = ['# written by the tests', 'endpoint = %s' % self.server.url, 'model=fake-model']
        lines += ['%s=%s' % item for item in settings.items()]
        with open(self.user_file('model.cfg'), 'w') as f:
            f.write('\n'.join(lines) + '\n')

    def append_config(self, *lines):
        """Add raw lines to the user's model.cfg (for settings config() cannot write)."""
        with open(self.user_file('model.cfg'), 'a') as f:
            f.write(''.join(line + '\n' for line in lines))

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('BANTAM_') and k not in ('OPENAI_API_KEY', 'NO_COLOR')}
        env.update(HOME=self.home, PYTHONIOENCODING='utf-8', LC_ALL='C.UTF-8')
        env.update(extra or {})
        return env

    def script(self, *replies):
        self.server.replies.extend(replies)

    def prompt_file(self, text='hello', name='prompt.txt'):
        path = os.path.join(self.cwd, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def run_bantam(self, *args, prompt='hello', env=None, stdin=None, timeout=60):
        """Run one-shot mode (a prompt file unless args are given); return the finished process."""
        args = list(args) or [self.prompt_file(prompt)]
        return subprocess.run(CMD + args, cwd=self.cwd, env=self.env(env),
                              input=stdin, capture_output=True, text=True, timeout=timeout,
                              errors='replace')

    def run_repl(self, *lines, env=None, timeout=60):
        """Run the REPL with its input from a pipe (no terminal): one line per prompt."""
        return subprocess.run(CMD, cwd=self.cwd, env=self.env(env),
                              input=''.join(line + '\n' for line in lines), capture_output=True,
                              text=True, timeout=timeout, errors='replace')

    def autosaved(self):
        path = os.path.join(self.sessions(), 'autosave.json')
        return self.read_session('autosave')['messages'] if os.path.exists(path) else []

    def start_bantam(self, *args, prompt='hello', env=None):
        """Start one-shot mode without waiting (for signals); stdout/stderr are pipes."""
        args = list(args) or [self.prompt_file(prompt)]
        return subprocess.Popen(CMD + args, cwd=self.cwd, env=self.env(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors='replace')

    def pty(self, *args, env=None):
        session = PtySession(CMD + list(args), self.cwd, self.env(env))
        self.addCleanup(session.close)
        return session

    def start_repl(self, **env):
        """The REPL on a pseudo-terminal, once it shows its first prompt."""
        session = self.pty(env=env)
        session.expect('> ')
        return session

    def ask(self, session, line, wait_for):
        """At the prompt, type a line and Enter; wait for wait_for after it; return the offset
        after that. (A line typed during a turn would be joined to the next one.)"""
        session.wait_for_prompt()
        start = len(session.text)
        session.send(line + '\r')
        return session.expect(wait_for, start=start)

    def sent(self, i=-1):
        """The messages of request i, as the server received them."""
        return self.server.requests[i]['body']['messages']

    def sessions(self):
        return os.path.join(self.home, '.bantam', 'sessions')

    def block_sessions(self):
        """Put a file where the sessions folder should be: every save fails."""
        os.makedirs(os.path.join(self.home, '.bantam'), exist_ok=True)
        with open(self.sessions(), 'w') as f:
            f.write('a file where the folder should be')

    def read_session(self, sid):
        with open(os.path.join(self.sessions(), sid + '.json')) as f:
            return json.load(f)

    def assert_valid_conversation(self, messages):
        """Every tool call answered in order, no empty assistant message."""
        for i, m in enumerate(messages):
            if m['role'] == 'assistant':
                self.assertTrue(m.get('content') or m.get('tool_calls'), m)
                ids = [c['id'] for c in m.get('tool_calls') or []]
                answers = [a.get('tool_call_id') for a in messages[i + 1:i + 1 + len(ids)]]
                self.assertEqual(ids, answers)


class PtySession:
    """bantam.py on a pseudo-terminal, as its controlling terminal, with a reader thread."""

    def __init__(self, argv, cwd, env):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, b'\x00\x18\x00\x50\x00\x00\x00\x00')  # 24x80
        env = dict(env, TERM='xterm')

        def controlling_tty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=slave, stdout=slave,
                                     stderr=slave, preexec_fn=controlling_tty, close_fds=True)
        os.close(slave)
        self.buffer, self.lock = b'', threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.buffer += data

    @property
    def text(self):
        with self.lock:
            return ANSI.sub('', self.buffer.decode('utf-8', 'replace')).replace('\r', '')

    def expect(self, needle, timeout=20, start=0):
        """Wait for needle in the output after offset start; return the offset after it."""
        found = wait_until(lambda: self.text.find(needle, start) + 1, timeout)
        if not found:
            raise AssertionError('%r not seen; output so far:\n%s' % (needle, self.text[-3000:]))
        return found - 1 + len(needle)

    def wait_for_prompt(self, timeout=20):
        """Wait until the last thing shown is the prompt: the REPL waits for a line."""
        if not wait_until(lambda: self.text.endswith('> '), timeout):
            raise AssertionError('no prompt; output so far:\n%s' % self.text[-3000:])

    def send(self, data):
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def wait(self, timeout=20):
        return self.proc.wait(timeout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        try:
            os.close(self.master)
        except OSError:
            pass

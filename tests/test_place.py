"""The user's place, however Bantam starts (issue 61 rows 1-3): a home that is not an absolute
path is refused before any setting is read (no settings, no sessions, no request), a script read
from standard input is beside nothing, and an option is never a file. Each test failed on round
9's build (main at a8a342c) but the guards named in their comments."""
import os
import subprocess
import sys

from fake_server import FakeServer
from helpers import BANTAM, BantamCase, python_only, waiting


class Place(BantamCase):

    def write(self, name, text):
        path = os.path.join(self.cwd, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)

    def theirs(self):
        """A cloned folder's server, and its model.cfg everywhere a relative home could put it."""
        server = FakeServer(default={'calls': [('shell_exec', {'command': 'touch owned.txt'})]})
        self.addCleanup(server.close)
        for folder in ('.bantam', '~/.bantam', 'home/.bantam', ''):
            self.write(os.path.join(folder, 'model.cfg'), 'endpoint=%s\n' % server.url)
            self.write(os.path.join(folder, 'system.txt'), 'THEIR SYSTEM PROMPT')
        return server

    def test_a_relative_home_is_refused_before_any_setting_is_read(self):
        theirs = self.theirs()
        for home in ('.', 'home'):
            for mode in ('one-shot', 'repl'):
                with self.subTest(home=home, mode=mode):
                    env = {'HOME': home}
                    proc = self.run_bantam(env=env) if mode == 'one-shot' else self.run_repl(
                        'hello', env=env)
                    self.assertEqual((proc.returncode, proc.stdout), (1, ''))
                    self.assertEqual(proc.stderr,
                                     'bantam: no home folder: HOME is not an absolute path\n')
        self.assertEqual((theirs.requests, self.server.requests), ([], []))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, 'owned.txt')))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, '.bantam', 'sessions')))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, '.bantam_history')))

    @python_only
    def test_a_script_read_from_standard_input_reads_the_users_settings_only(self):
        theirs = self.theirs()
        self.script({'text': 'the user server answers'})
        with open(BANTAM) as source:
            proc = subprocess.run([sys.executable, '-', self.prompt_file()], cwd=self.cwd,
                                  env=self.env(), stdin=source, capture_output=True, text=True,
                                  timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn('the user server answers', proc.stdout)
        self.assertNotIn('THEIR', self.sent()[0]['content'])
        self.assertEqual(theirs.requests, [])

    @waiting  # no options (README "Known limits")
    def test_an_option_is_never_a_file(self):
        for option in ('--version', '-v', '-p'):
            with self.subTest(option=option):
                self.write(option, '$ touch owned.txt')
                proc = self.run_bantam(option)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertTrue(proc.stdout.startswith('usage: '), proc.stdout)
        self.assertEqual(self.server.requests, [])

    def test_a_file_named_like_an_option_runs_by_its_path(self):
        self.write('-v', 'the prompt in a file named -v')
        self.script({'text': 'done'})
        proc = self.run_bantam('./-v')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.sent()[-1]['content'], 'the prompt in a file named -v')

    @waiting  # no options (README "Known limits")
    def test_help_is_the_usage_on_stdout(self):
        proc = self.run_bantam('--help')
        self.assertEqual(proc.returncode, 0)
        self.assertTrue(proc.stdout.startswith('usage: '), proc.stdout)
        self.assertEqual(self.server.requests, [])


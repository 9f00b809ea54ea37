"""Bantam against a real model, on small realistic tasks, judged by the files they leave.

Skipped unless BANTAM_LIVE_ENDPOINT is set (it is too slow and too large for CI), e.g. with the
llama.cpp server and the 1.5B Qwen coder model of ../shared/real-llm:

    BANTAM_LIVE_ENDPOINT=http://127.0.0.1:8080/v1 python3 -m unittest tests.test_live -v

Optional: BANTAM_LIVE_MODEL (default "local"), BANTAM_LIVE_TEMPERATURE (default 0.2).
Each task runs one-shot in a fresh directory with its own HOME; a summary line per task is
printed at the end (and appended to $TMPDIR/bantam-live-results.txt), and each task's files and
trace are written to $TMPDIR/bantam-live-traces/<test name>.txt.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENDPOINT = os.environ.get('BANTAM_LIVE_ENDPOINT')
RESULTS = []
TRACES = os.path.join(tempfile.gettempdir(), 'bantam-live-traces')


def read(path):
    with open(path) as f:
        return f.read().strip()


@unittest.skipUnless(ENDPOINT, 'set BANTAM_LIVE_ENDPOINT to run against a real model')
class LiveTasks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(TRACES, exist_ok=True)

    def run_task(self, prompt, files=None):
        """Run one prompt one-shot in a fresh directory; return the directory."""
        work = tempfile.mkdtemp(prefix='bantam-live-')
        self.addCleanup(shutil.rmtree, work, True)
        for name, text in (files or {}).items():
            os.makedirs(os.path.join(work, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(work, name), 'w') as f:
                f.write(text)
        with open(os.path.join(work, 'model.cfg'), 'w') as f:
            f.write('endpoint=%s\nmodel=%s\ntemperature=%s\ntimeout=600\nmax_al_iterations=15\n'
                    'color=never\n' % (ENDPOINT, os.environ.get('BANTAM_LIVE_MODEL', 'local'),
                                       os.environ.get('BANTAM_LIVE_TEMPERATURE', '0.2')))
        with open(os.path.join(work, '.prompt'), 'w') as f:
            f.write(prompt)
        env = dict(os.environ, HOME=work)
        env = {k: v for k, v in env.items() if not k.startswith('BANTAM_')}
        start = time.monotonic()
        proc = subprocess.run([sys.executable, os.path.join(ROOT, 'bantam.py'), '.prompt'],
                              cwd=work, env=env, capture_output=True, text=True, timeout=900)
        self.seconds, self.trace = time.monotonic() - start, proc.stderr
        with open(os.path.join(TRACES, self._testMethodName + '.txt'), 'w') as f:
            f.write('$ ls -R\n%s\n--- stdout\n%s\n--- stderr\n%s' % (
                subprocess.run(['ls', '-R'], cwd=work, capture_output=True, text=True).stdout,
                proc.stdout, proc.stderr))
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertNotIn('max_al_iterations', proc.stderr)
        return work

    def run(self, result=None):  # record one summary line per task that ran
        result = result or self.defaultTestResult()
        before = len(result.failures) + len(result.errors)
        super().run(result)
        if hasattr(self, 'seconds'):
            ok = len(result.failures) + len(result.errors) == before
            RESULTS.append('%-28s %s  %2d tool calls  %5.1f s' % (
                self._testMethodName[5:], 'PASS' if ok else 'FAIL',
                self.trace.count('[tool call:'), self.seconds))
        return result

    @classmethod
    def tearDownClass(cls):
        print('\n' + '\n'.join(RESULTS), file=sys.stderr)
        with open(os.path.join(tempfile.gettempdir(), 'bantam-live-results.txt'), 'a') as f:
            f.write('\n'.join(RESULTS) + '\n\n')

    def test_write_a_file(self):
        work = self.run_task('Create a file named greeting.txt that contains exactly this line: '
                             'Hello from Bantam')
        self.assertEqual(read(os.path.join(work, 'greeting.txt')), 'Hello from Bantam')

    def test_count_lines(self):
        work = self.run_task('Count the lines of data.txt and write only the number into '
                             'count.txt.', {'data.txt': ''.join('row %d\n' % i for i in range(17))})
        self.assertEqual(read(os.path.join(work, 'count.txt')), '17')

    def test_find_the_file_with_a_word(self):
        files = {'notes/a.txt': 'apples and pears\n', 'notes/b.txt': 'a pineapple cake\n',
                 'notes/c.txt': 'plums\n'}
        work = self.run_task('Which file in the notes directory contains the word pineapple? '
                             'Write just its file name (like x.txt) into answer.txt.', files)
        self.assertEqual(os.path.basename(read(os.path.join(work, 'answer.txt'))), 'b.txt')

    def test_sum_numbers(self):
        numbers = [12, 45, 7, 88, 130, 9, 54, 201, 43]
        work = self.run_task('numbers.txt holds one number per line. Write their sum into '
                             'sum.txt.', {'numbers.txt': '\n'.join(map(str, numbers)) + '\n'})
        self.assertEqual(read(os.path.join(work, 'sum.txt')), str(sum(numbers)))

    def test_rename_by_extension(self):
        files = {name: name.upper() for name in ('cat.jpeg', 'dog.jpeg', 'bird.jpeg', 'notes.txt')}
        work = self.run_task('Rename every .jpeg file in this directory so that its name ends in '
                             '.jpg instead. Change nothing else.', files)
        for animal in ('cat', 'dog', 'bird'):
            self.assertEqual(read(os.path.join(work, animal + '.jpg')), animal.upper() + '.JPEG')
            self.assertFalse(os.path.exists(os.path.join(work, animal + '.jpeg')))
        self.assertEqual(read(os.path.join(work, 'notes.txt')), 'NOTES.TXT')

    def test_make_a_directory_tree(self):
        work = self.run_task('Create the directories project/src, project/tests and project/docs, '
                             'and an empty file project/README.md.')
        for folder in ('src', 'tests', 'docs'):
            self.assertTrue(os.path.isdir(os.path.join(work, 'project', folder)), folder)
        self.assertEqual(os.path.getsize(os.path.join(work, 'project', 'README.md')), 0)

    def test_report_a_version(self):
        work = self.run_task('Find out which version of python3 is installed here and write only '
                             'the version number (like 3.9.2) into version.txt.')
        version = subprocess.run(['python3', '--version'], capture_output=True, text=True)
        self.assertEqual(read(os.path.join(work, 'version.txt')), version.stdout.split()[1])

    def test_delegate_to_a_subagent(self):
        work = self.run_task('Use the run_subagent tool to have a child agent create a file named '
                             'child.txt containing the word delegated.')
        self.assertIn('[tool call: run_subagent(', self.trace)
        self.assertEqual(read(os.path.join(work, 'child.txt')), 'delegated')


if __name__ == '__main__':
    unittest.main()

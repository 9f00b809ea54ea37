"""Bantam against a real model, on small realistic tasks, judged by the files they leave.

Skipped unless BANTAM_LIVE_ENDPOINT is set (it is too slow and too large for CI), e.g. with the
llama.cpp server and the 1.5B Qwen coder model of ../shared/real-llm:

    BANTAM_LIVE_ENDPOINT=http://127.0.0.1:8080/v1 python3 -m unittest tests.test_live -v
    ... tests.test_live.OneStep     (eight one-step tasks)
    ... tests.test_live.OneStepReworded   (the same eight, asked in other words)
    ... tests.test_live.MultiStep   (ten multi-step tasks)
    ... tests.test_live.FullWindow  (three tasks whose output overflows a 4,096-token window:
                                     start the server with CTX=4096)
    ... tests.test_live.FullWindowReworded   (the same three, asked in other words)

A task fails when the files are not right, when a file the task did not ask to change was
changed or removed, when the run reached max_al_iterations, or when it ended with an error (for
FullWindow, that it ended with the context error is noted in the summary line as CONTEXT).

Optional: BANTAM_LIVE_MODEL (default "local"), BANTAM_LIVE_TEMPERATURE (default 0.2).
Each task runs one-shot in a fresh directory with its own HOME; a summary line per task is
printed at the end (and appended to $TMPDIR/bantam-live-results.txt), and each task's files and
trace are written to $TMPDIR/bantam-live-traces/<class>.<test name>.txt.
"""
import json
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
    """How a task runs and is judged; the tasks are in the two sets below."""
    @classmethod
    def setUpClass(cls):
        os.makedirs(TRACES, exist_ok=True)

    def run_task(self, prompt, files=None, may_change=()):
        """Run one prompt one-shot in a fresh directory; return the directory. Every given file
        not named in may_change must be left as it was."""
        work = tempfile.mkdtemp(prefix='bantam-live-')
        self.addCleanup(shutil.rmtree, work, True)
        for name, text in (files or {}).items():
            os.makedirs(os.path.join(work, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(work, name), 'w') as f:
                f.write(text)
        home = tempfile.mkdtemp(prefix='bantam-live-home-')  # the user's own settings
        self.addCleanup(shutil.rmtree, home, True)
        os.makedirs(os.path.join(home, '.bantam'))
        with open(os.path.join(home, '.bantam', 'model.cfg'), 'w') as f:
            f.write('endpoint=%s\nmodel=%s\ntemperature=%s\ntimeout=600\nmax_al_iterations=15\n'
                    'color=never\nmax_tokens=1024\n' % (
                        ENDPOINT, os.environ.get('BANTAM_LIVE_MODEL', 'local'),
                        os.environ.get('BANTAM_LIVE_TEMPERATURE', '0.2')))
        with open(os.path.join(work, '.prompt'), 'w') as f:
            f.write(prompt)
        env = dict(os.environ, HOME=home)
        env = {k: v for k, v in env.items() if not k.startswith('BANTAM_')}
        start = time.monotonic()
        proc = subprocess.run([sys.executable, os.path.join(ROOT, 'bantam.py'), '.prompt'],
                              cwd=work, env=env, capture_output=True, text=True, timeout=900)
        self.seconds, self.trace = time.monotonic() - start, proc.stderr
        name = '%s.%s.txt' % (type(self).__name__, self._testMethodName)
        with open(os.path.join(TRACES, name), 'w') as f:
            f.write('$ ls -R\n%s\n--- stdout\n%s\n--- stderr\n%s' % (
                subprocess.run(['ls', '-R'], cwd=work, capture_output=True, text=True).stdout,
                proc.stdout, proc.stderr))
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertNotIn('max_al_iterations', proc.stderr)
        for name, text in (files or {}).items():
            if name not in may_change:
                self.assertTrue(os.path.exists(os.path.join(work, name)), name + ' was removed')
                self.assertEqual(read(os.path.join(work, name)), text.strip(), name + ' changed')
        return work

    def run(self, result=None):  # record one summary line per task that ran
        result = result or self.defaultTestResult()
        before = len(result.failures) + len(result.errors)
        super().run(result)
        if hasattr(self, 'seconds'):
            ok = len(result.failures) + len(result.errors) == before
            context = 'CONTEXT' if 'context size' in self.trace.strip()[-300:] else ''
            RESULTS.append('%-28s %s  %2d tool calls  %5.1f s  %2d left out  %s' % (
                self._testMethodName[5:], 'PASS' if ok else 'FAIL',
                self.trace.count('[tool call:'), self.seconds,
                self.trace.count('context window is full'), context))
        return result

    @classmethod
    def tearDownClass(cls):
        print('\n' + '\n'.join(RESULTS), file=sys.stderr)
        with open(os.path.join(tempfile.gettempdir(), 'bantam-live-results.txt'), 'a') as f:
            f.write('\n'.join(RESULTS) + '\n\n')



class OneStep(LiveTasks):
    """Eight one-step tasks; OneStepReworded asks for the same in other words."""
    ASK = {
        'write': 'Create a file named greeting.txt that contains exactly this line: '
                 'Hello from Bantam',
        'count': 'Count the lines of data.txt and write only the number into count.txt.',
        'find': 'Which file in the notes directory contains the word pineapple? Write just its '
                'file name (like x.txt) into answer.txt.',
        'sum': 'numbers.txt holds one number per line. Write their sum into sum.txt.',
        'rename': 'Rename every .jpeg file in this directory so that its name ends in .jpg '
                  'instead. Change nothing else.',
        'tree': 'Create the directories project/src, project/tests and project/docs, and an '
                'empty file project/README.md.',
        'version': 'Find out which version of python3 is installed here and write only the '
                   'version number (like 3.9.2) into version.txt.',
        'delegate': 'Use the run_subagent tool to have a child agent create a file named '
                    'child.txt containing the word delegated.'}

    def test_write_a_file(self):
        work = self.run_task(self.ASK['write'])
        self.assertEqual(read(os.path.join(work, 'greeting.txt')), 'Hello from Bantam')

    def test_count_lines(self):
        work = self.run_task(self.ASK['count'],
                             {'data.txt': ''.join('row %d\n' % i for i in range(17))})
        self.assertEqual(read(os.path.join(work, 'count.txt')), '17')

    def test_find_the_file_with_a_word(self):
        files = {'notes/a.txt': 'apples and pears\n', 'notes/b.txt': 'a pineapple cake\n',
                 'notes/c.txt': 'plums\n'}
        work = self.run_task(self.ASK['find'], files)
        self.assertEqual(os.path.basename(read(os.path.join(work, 'answer.txt'))), 'b.txt')

    def test_sum_numbers(self):
        numbers = [12, 45, 7, 88, 130, 9, 54, 201, 43]
        work = self.run_task(self.ASK['sum'],
                             {'numbers.txt': '\n'.join(map(str, numbers)) + '\n'})
        self.assertEqual(read(os.path.join(work, 'sum.txt')), str(sum(numbers)))

    def test_rename_by_extension(self):
        files = {name: name.upper() for name in ('cat.jpeg', 'dog.jpeg', 'bird.jpeg', 'notes.txt')}
        work = self.run_task(self.ASK['rename'], files,
                             may_change=('cat.jpeg', 'dog.jpeg', 'bird.jpeg'))
        for animal in ('cat', 'dog', 'bird'):
            self.assertEqual(read(os.path.join(work, animal + '.jpg')), animal.upper() + '.JPEG')
            self.assertFalse(os.path.exists(os.path.join(work, animal + '.jpeg')))
        self.assertEqual(read(os.path.join(work, 'notes.txt')), 'NOTES.TXT')

    def test_make_a_directory_tree(self):
        work = self.run_task(self.ASK['tree'])
        for folder in ('src', 'tests', 'docs'):
            self.assertTrue(os.path.isdir(os.path.join(work, 'project', folder)), folder)
        self.assertEqual(os.path.getsize(os.path.join(work, 'project', 'README.md')), 0)

    def test_report_a_version(self):
        work = self.run_task(self.ASK['version'])
        version = subprocess.run(['python3', '--version'], capture_output=True, text=True)
        self.assertEqual(read(os.path.join(work, 'version.txt')), version.stdout.split()[1])

    def test_delegate_to_a_subagent(self):
        work = self.run_task(self.ASK['delegate'])
        self.assertIn('[tool call: run_subagent(', self.trace)
        self.assertEqual(read(os.path.join(work, 'child.txt')), 'delegated')


class OneStepReworded(OneStep):
    """The same tasks and checks in the words another user might choose: a suite tuned to one
    phrasing says little about the next request."""
    ASK = {
        'write': 'Please make greeting.txt. Its only line should read: Hello from Bantam',
        'count': 'How many lines are there in data.txt? Put just that number in count.txt.',
        'find': 'Look through the notes folder and find the file that mentions pineapple. Save '
                'only that file\'s name, for example x.txt, to answer.txt.',
        'sum': 'Add up all the numbers listed in numbers.txt (one per line) and save the total '
               'to sum.txt.',
        'rename': 'The .jpeg files here should be called .jpg instead. Rename them and leave '
                  'everything else alone.',
        'tree': 'Set up a folder named project with the subfolders src, tests and docs, plus an '
                'empty README.md inside project.',
        'version': 'What python3 version is installed? Save just the number, such as 3.9.2, to '
                   'version.txt.',
        'delegate': 'Ask a child agent (the run_subagent tool) to make child.txt holding the '
                    'single word delegated.'}


CALC = 'def average(numbers):\n    return sum(numbers) / (len(numbers) + 1)\n'
TEST_CALC = ('import unittest\nfrom calc import average\n\n\nclass T(unittest.TestCase):\n'
             '    def test_average(self):\n        self.assertEqual(average([2, 4, 6]), 4)\n\n\n'
             'if __name__ == "__main__":\n    unittest.main()\n')
SALES = 'region,amount\nnorth,120\nsouth,80\nnorth,30\neast,45\nsouth,20\neast,5\n'
LOG = ('2026-11-02 login ok user=Ann.Lee@Example.com\n2026-11-02 login fail user=bob@test.org\n'
       '2026-11-03 login ok user=ann.lee@example.com\n2026-11-03 mail to CAROL@Test.org queued\n'
       '2026-11-04 login ok user=bob@test.org\n')
CONFIG = '{"name": "shop", "port": 8080, "debug": true, "workers": 4, "log": "info"}'


class MultiStep(LiveTasks):
    def test_fix_a_failing_test(self):
        work = self.run_task('The test in test_calc.py fails. Fix the bug in calc.py so that it '
                             'passes. Do not edit the test.', {'calc.py': CALC,
                                                              'test_calc.py': TEST_CALC},
                             may_change=('calc.py',))
        proc = subprocess.run([sys.executable, '-m', 'unittest', 'test_calc'], cwd=work,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_total_per_group(self):
        work = self.run_task('sales.csv has a region and an amount on each row. Total the amounts '
                             'per region and write totals.csv with lines region,total sorted by '
                             'region, no header.', {'sales.csv': SALES})
        self.assertEqual(read(os.path.join(work, 'totals.csv')).split(),
                         ['east,50', 'north,150', 'south,100'])

    def test_largest_file_in_a_tree(self):
        files = {'assets/logo.png': 'x' * 300, 'assets/icons/big.bin': 'y' * 5000,
                 'assets/icons/small.bin': 'z' * 10, 'assets/fonts/a.ttf': 'w' * 1200}
        work = self.run_task('What is the largest file anywhere under assets/? Save its path '
                             '(for example assets/x/y.z) in largest.txt.', files)
        self.assertTrue(read(os.path.join(work, 'largest.txt')).endswith('assets/icons/big.bin'))

    def test_git_repository_and_commit(self):
        files = {'app.py': 'print("hi")\n', 'README': 'An app.\n',
                 '.gitconfig': '[user]\n\tname = Test\n\temail = test@example.com\n'}
        work = self.run_task('Make this directory a git repository and commit all of its files '
                             'with the message "first import".', files)
        log = subprocess.run(['git', 'log', '--format=%s'], cwd=work, capture_output=True,
                             text=True).stdout.strip()
        tracked = subprocess.run(['git', 'ls-files'], cwd=work, capture_output=True,
                                 text=True).stdout.split()
        self.assertEqual(log, 'first import')
        self.assertTrue({'app.py', 'README'} <= set(tracked), tracked)

    def test_write_run_and_save_a_script(self):
        work = self.run_task('Write a Python script primes.py that prints the prime numbers below '
                             '30, one per line. Run it and store its output in primes.txt.')
        self.assertTrue(os.path.exists(os.path.join(work, 'primes.py')))
        self.assertEqual(read(os.path.join(work, 'primes.txt')).split(),
                         ['2', '3', '5', '7', '11', '13', '17', '19', '23', '29'])

    def test_replace_a_word_in_one_type_of_file(self):
        files = {'docs/intro.md': 'Pick a colour.\n', 'docs/guide/more.md': 'The colour red.\n',
                 'src/paint.py': 'colour = "red"\n', 'notes.txt': 'colour notes\n'}
        work = self.run_task('Replace the word colour with color in all .md files, including '
                             'those in subfolders. Other files must stay as they are.', files,
                             may_change=('docs/intro.md', 'docs/guide/more.md'))
        self.assertEqual(read(os.path.join(work, 'docs/intro.md')), 'Pick a color.')
        self.assertEqual(read(os.path.join(work, 'docs/guide/more.md')), 'The color red.')

    def test_distinct_matches_normalised_and_sorted(self):
        work = self.run_task('List every distinct e-mail address in access.log, in lower case, '
                             'sorted, one per line, in emails.txt.', {'access.log': LOG})
        self.assertEqual(read(os.path.join(work, 'emails.txt')).split(),
                         ['ann.lee@example.com', 'bob@test.org', 'carol@test.org'])

    def test_change_two_json_keys_and_keep_the_rest(self):
        work = self.run_task('In config.json, change port to 9090 and debug to false. Keep every '
                             'other setting.', {'config.json': CONFIG}, may_change=('config.json',))
        with open(os.path.join(work, 'config.json')) as f:
            self.assertEqual(json.load(f), dict(json.loads(CONFIG), port=9090, debug=False))

    def test_count_matches_per_file(self):
        files = {'notes/a.txt': 'TODO one\nok\nTODO two\n', 'notes/b.txt': 'nothing here\n',
                 'notes/c.txt': 'TODO\nTODO\nTODO\n'}
        work = self.run_task('For each file in notes, count the lines containing TODO. Write '
                             'report.txt with one line per file like a.txt: 2', files)
        lines = [line.replace(' ', '') for line in read(os.path.join(work, 'report.txt')).split(
            '\n')]
        self.assertEqual(sorted(os.path.basename(line) for line in lines),
                         ['a.txt:2', 'b.txt:0', 'c.txt:3'])

    def test_look_something_up_then_act_on_it(self):
        work = self.run_task('Read the version number in the VERSION file and create a directory '
                             'named release-<that version>.', {'VERSION': '2.7.1\n'})
        self.assertTrue(os.path.isdir(os.path.join(work, 'release-2.7.1')))



def big_log(lines=700):
    """A log of about 44 KB (some 15,000 tokens): more than a 4,096-token window holds."""
    rows = ['2026-11-30 %02d:%02d:%02d %s worker-%d batch %d took %d ms' % (
        i // 3600, i // 60 % 60, i % 60, 'ERROR' if i % 37 == 0 else 'INFO', i % 7, i,
        (i * 7919) % 997) for i in range(1, lines)]
    return '\n'.join(rows + ['2026-11-30 23:59:59 INFO shutdown complete']) + '\n'


class FullWindow(LiveTasks):
    """Each command prints more than the server's window holds; the run must not die of it.
    FullWindowReworded asks for the same in other words."""
    ASK = {
        'last': 'Print the whole of big.log with cat, then write its last line into last.txt.',
        'errors': 'First show me everything in big.log (use cat). After that, count the lines '
                  'that contain ERROR and write the count into errors.txt.',
        'rows': 'Look at all of scores.csv with cat. Then write how many data rows it has (not '
                'counting the header line) into rows.txt.'}
    TABLE = 'id,name,score\n' + ''.join('%d,player%d,%d\n' % (i, i, i * 3 % 100)
                                        for i in range(1, 1500))

    def test_print_a_log_then_keep_its_last_line(self):
        work = self.run_task(self.ASK['last'], {'big.log': big_log()})
        self.assertEqual(read(os.path.join(work, 'last.txt')),
                         '2026-11-30 23:59:59 INFO shutdown complete')

    def test_show_a_log_then_count_its_errors(self):
        work = self.run_task(self.ASK['errors'], {'big.log': big_log()})
        self.assertEqual(read(os.path.join(work, 'errors.txt')), str(699 // 37))

    def test_read_a_table_then_count_its_rows(self):
        work = self.run_task(self.ASK['rows'], {'scores.csv': self.TABLE})
        self.assertEqual(read(os.path.join(work, 'rows.txt')), '1499')


class FullWindowReworded(FullWindow):
    ASK = {
        'last': 'I want to read big.log in full, so cat it for me. Afterwards save the final line '
                'of the log in a file called last.txt.',
        'errors': 'Run cat big.log so I can see all of it. Then put the number of ERROR lines in '
                  'big.log into errors.txt.',
        'rows': 'Dump scores.csv to the screen with cat. Next, count its rows without the header '
                'and save that number in rows.txt.'}


if __name__ == '__main__':
    unittest.main()

"""The rows that wait for lines (README "Left out"), one test each, marked as expected failures:
each shows what a user meets today, and turns into an unexpected success (a failed run) the
day its row is built, when the marker comes off. Issue 37 rows 3-4 and issue 38 rows 4-11."""
import json
import os
import subprocess
import unittest

from helpers import CMD, BantamCase
from test_merge import stream
from test_refusals import Window, body


class Waiting(BantamCase):
    @unittest.expectedFailure
    def test_a_value_that_changes_type_does_not_end_the_turn(self):  # issue 37 row 3
        self.script(stream({'reasoning_details': 'text first'},
                           {'reasoning_details': [{'type': 'reasoning.text', 'text': 'then'}]},
                           {'content': 'answer'}))
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)

    @unittest.expectedFailure
    def test_a_big_kept_field_cannot_fill_the_window(self):  # issue 37 row 4
        trace = 'x' * 100000
        window = Window(60000, body('openai-error-400-context-length-exceeded'), [
            stream({'reasoning_trace': trace, 'content': 'first answer'}), {'text': 'second'}])
        self.server.default = window
        proc = self.run_repl('first', 'second')
        self.assertIn('second', proc.stdout, proc.stderr[-500:])

    @unittest.expectedFailure
    def test_a_failing_stdout_ends_the_repl(self):  # issue 38 row 4
        with open('/dev/full', 'w') as full:
            repl = subprocess.Popen(CMD, cwd=self.cwd, env=self.env(), stdin=subprocess.PIPE,
                                    stdout=full, stderr=subprocess.DEVNULL)
        self.addCleanup(repl.wait)
        self.addCleanup(repl.kill)
        try:
            repl.communicate(b'hello\n', timeout=5)
        except subprocess.TimeoutExpired:
            self.fail('the REPL goes on printing its error about the full stdout')

    @unittest.expectedFailure
    def test_two_repls_histories_add_up(self):  # issue 38 row 5
        self.script({'text': 'first answer'}, {'text': 'second answer'})
        one, two = self.start_repl(), self.start_repl()
        self.ask(one, 'alpha line', 'first answer')
        self.ask(two, 'beta line', 'second answer')
        for session in (one, two):
            session.send('/quit\r')
            session.proc.wait(timeout=20)
        with open(os.path.join(self.home, '.bantam_history')) as f:
            history = f.read()
        self.assertIn('alpha line', history)
        self.assertIn('beta line', history)

    @unittest.expectedFailure
    def test_load_of_an_odd_file_keeps_the_repl(self):  # issue 38 row 6
        os.makedirs(self.sessions())
        with open(os.path.join(self.sessions(), 'odd.json'), 'w') as f:
            json.dump({'messages': 'hello'}, f)
        self.script({'text': 'still here'})
        proc = self.run_repl('/load odd', 'are you there?')
        self.assertIn('still here', proc.stdout, proc.stderr)

    @unittest.expectedFailure
    def test_the_tokens_a_turn_cost_are_shown(self):  # issue 38 row 7
        self.script({'text': 'ok', 'usage': {'prompt_tokens': 12, 'completion_tokens': 3,
                                             'total_tokens': 15}})
        proc = self.run_bantam()
        self.assertIn('include_usage', json.dumps(self.server.requests[0]['body']))
        self.assertIn('12', proc.stderr)

    @unittest.expectedFailure
    def test_a_failing_autosave_is_one_line(self):  # issue 38 row 8
        os.makedirs(os.path.join(self.home, '.bantam'))
        with open(self.sessions(), 'w') as f:
            f.write('a file where the folder should be')
        self.script({'text': 'one'}, {'text': 'two'})
        proc = self.run_repl('first', 'second')
        self.assertIn('two', proc.stdout, proc.stderr)

    @unittest.expectedFailure
    def test_odd_files_in_the_sessions_folder_hide_no_other(self):  # issue 38 row 9
        os.makedirs(os.path.join(self.sessions(), 'dir.json'))
        with open(os.path.join(self.sessions(), 'good.json'), 'w') as f:
            json.dump({'time': 'then', 'summary': 'the good one', 'messages': []}, f)
        proc = self.run_repl('/list')
        self.assertIn('the good one', proc.stderr)

    @unittest.expectedFailure
    def test_arguments_sent_as_an_object_are_used(self):  # issue 38 row 10
        call = {'index': 0, 'id': 'call_1', 'type': 'function',
                'function': {'name': 'shell_exec', 'arguments': {'command': 'echo object-args'}}}
        self.script(stream({'tool_calls': [call]}, finish='tool_calls'), {'text': 'done'})
        proc = self.run_bantam()
        self.assertIn('object-args', self.sent()[-1]['content'], proc.stderr)

    @unittest.expectedFailure
    def test_text_the_terminal_cannot_encode_does_not_end_the_turn(self):  # issue 38 row 11
        self.script({'text': 'caf\u00e9 \U0001f600 done'})
        proc = self.run_bantam(env={'PYTHONIOENCODING': 'latin-1'})
        self.assertEqual(proc.returncode, 0, proc.stderr)

"""A good Unix citizen: pipeable one-shot output, bounded tool output, well-behaved children,
clean tool text, and small-model guards (repeat notes, empty results)."""
import json
import os
import signal
import subprocess
import sys
import time

from helpers import BANTAM, CMD, BantamCase, alive, wait_until


class Pipes(BantamCase):
    def test_stdout_has_only_the_models_words(self):
        self.script({'reasoning': 'plan', 'calls': [('shell_exec', {'command': 'echo traced'})]},
                    {'status': 503, 'json': {'error': {'message': 'hiccup'}}},
                    {'text': 'The answer.'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout, '--- reasoning start ---\nplan\n--- reasoning end ---\n'
                                      'The answer.\n')
        for noise in ('...requesting...', '[tool call:', '[tool result:', 'traced', 'hiccup'):
            self.assertIn(noise, proc.stderr)

    def test_answer_redirected_to_a_file(self):
        self.script({'calls': [('shell_exec', {'command': 'echo noise'})]}, {'text': '# Title\n'})
        answer = os.path.join(self.cwd, 'answer.md')
        with open(answer, 'w') as out:
            proc = subprocess.run(CMD + [self.prompt_file()], cwd=self.cwd,
                                  env=self.env(), stdout=out, stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(proc.returncode, 0)
        with open(answer) as f:
            self.assertEqual(f.read(), '# Title\n')

    def test_prompt_from_standard_input(self):
        self.script({'text': 'read it'})
        proc = self.run_bantam('-', stdin='from a pipe\nsecond line\n')
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(self.sent()[1]['content'], 'from a pipe\nsecond line\n')

    def test_exit_codes(self):
        self.script({'status': 401, 'json': {'error': {'message': 'who are you'}}})
        self.assertEqual(self.run_bantam().returncode, 1)
        self.script({'text': 'slow', 'stall': 30, 'after': 1})
        proc = self.start_bantam()
        self.assertTrue(wait_until(lambda: len(self.server.requests) == 2))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 130)
        self.assertNotIn('Traceback', err)

    def test_help_needs_no_network_and_lists_keys_and_commands(self):
        for flag in ('-h', '--help'):
            proc = self.run_bantam(flag)
            self.assertEqual(proc.returncode, 0)
            for word in ('usage:', 'endpoint', 'shell_timeout', 'max_tool_res', '/save', '/load'):
                self.assertIn(word, proc.stdout)
        self.assertEqual(self.server.requests, [])

    def test_a_closed_stdout_ends_quietly(self):
        self.script({'text': 'line\n' * 20000})
        proc = subprocess.Popen(CMD + [self.prompt_file()], cwd=self.cwd,
                                env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.read(10)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait(30)
        proc.stderr.close()
        self.assertNotIn('Traceback', err)


class BoundedOutput(BantamCase):
    def test_long_output_keeps_head_tail_and_the_exit_line(self):
        self.config(max_tool_res=2000)
        command = 'for i in $(seq 1 2000); do echo line $i; done; exit 4'
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        self.run_bantam()
        result = self.sent()[-1]['content']
        self.assertLessEqual(len(result.encode()), 2000)
        self.assertTrue(result.startswith('line 1\nline 2\n'))
        self.assertTrue(result.endswith('line 2000\n\n\nexit: 4'))
        self.assertRegex(result, r'\[\.\.\. \d+ bytes left out: see them with head, tail or grep')

    def peak_rss_kb(self, command):
        """Peak RSS of a one-shot Bantam run whose tool prints what command prints."""
        self.server.requests.clear()
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        probe = ('import resource, subprocess, sys\n'
                 'quiet = subprocess.DEVNULL\n'
                 'subprocess.run(sys.argv[1:], stdout=quiet, stderr=quiet)\n'
                 'print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)')
        out = subprocess.run([sys.executable, '-c', probe] + CMD + [self.prompt_file()],
                             cwd=self.cwd, env=self.env(),
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(len(self.server.requests), 2)
        return int(out.stdout)

    def test_memory_stays_flat_for_200_mb_of_output(self):
        small = self.peak_rss_kb('echo small')
        large = self.peak_rss_kb('head -c 200000000 /dev/zero | tr "\\0" x')
        self.assertLess(large - small, 5000, (small, large))
        self.assertLess(len(self.sent()[-1]['content'].encode()), 32768)


class Children(BantamCase):
    def test_a_background_child_does_not_hold_the_call(self):
        pidfile = os.path.join(self.cwd, 'server.pid')
        command = 'sleep 100 & echo $! > %s; echo started' % pidfile
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        start = time.monotonic()
        proc = self.run_bantam()
        self.assertLess(time.monotonic() - start, 15)  # shell_timeout is 20
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(self.sent()[-1]['content'], 'started\n\n\nexit: 0')
        with open(pidfile) as f:
            pid = int(f.read())
        self.addCleanup(lambda: alive(pid) and os.kill(pid, signal.SIGKILL))
        self.assertTrue(alive(pid))

    def test_own_process_group_and_session(self):
        command = 'echo begin; ps -o pgid= -p $$; ps -o sid= -p $$'
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        proc = self.start_bantam()
        out, err = proc.communicate(timeout=30)
        lines = self.sent()[-1]['content'].split('\n')
        self.assertEqual(lines[0], 'begin')
        self.assertNotEqual(int(lines[1]), os.getpgrp())  # Bantam runs in the test's group
        self.assertNotEqual(int(lines[2]), os.getsid(0))


class CleanText(BantamCase):
    def test_invisible_and_bidi_characters_are_removed(self):
        hidden = '\u200bzero\u200dwidth \u202eevil\u202c \ufeffbom\u2066x\u2069 \x1b[31mred'
        kept = 'tab\there\nnew line, \u00e9t\u00e9, \u4f60\u597d, \u0645\u0631\u062d\u0628\u0627'
        command = "printf '%s\\n%s'" % (hidden, kept)
        raw = json.dumps({'command': command + ' # \u200bnote'}, ensure_ascii=False)
        self.script({'calls': [('shell_exec', raw)]},
                    {'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        proc = self.run_bantam()
        result = self.sent(1)[-1]['content']
        self.assertEqual(result, self.sent()[-1]['content'].split('\n\nNote')[0])  # escaped too
        self.assertTrue(result.startswith('zerowidth evil bomx [31mred\n' + kept), result)
        for char in '\u200b\u200d\u202e\u202c\ufeff\u2066\u2069\x1b':
            self.assertNotIn(char, result + proc.stderr)
        self.assertIn('# note', proc.stderr)


class Truncation(BantamCase):
    def test_finish_reason_length_is_reported(self):
        self.script({'text': 'cut sh', 'finish': 'length'})
        proc = self.run_bantam()
        self.assertIn('token limit', proc.stderr)
        self.assertEqual(proc.stdout, 'cut sh\n')


class SmallModels(BantamCase):
    def test_an_identical_repeated_call_is_run_and_flagged(self):
        call = ('shell_exec', {'command': 'ls'})
        self.script({'calls': [call]}, {'calls': [call]},
                    {'calls': [('shell_exec', {'command': 'pwd'})]}, {'text': 'done'})
        self.run_bantam()
        results = [m['content'] for m in self.sent() if m['role'] == 'tool']
        self.assertEqual(len(results), 3)
        self.assertNotIn('exact call', results[0])
        self.assertIn('exact call', results[1])
        self.assertIn('prompt.txt\n', results[1])
        self.assertNotIn('exact call', results[2])

    def test_three_identical_calls_in_a_row_make_it_answer_without_tools(self):
        call = ('shell_exec', {'command': 'ls'})
        self.script({'calls': [call]}, {'calls': [call]}, {'calls': [call]}, {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(['tools' in r['body'] for r in self.server.requests],
                         [True, True, True, False])
        self.assertEqual(proc.stdout, 'done\n')

    def test_a_call_repeated_after_another_one_is_flagged(self):
        # Every reply's first call has the id call_0 here, as with some servers: results are
        # matched to calls by position, not by id.
        a, b = ('shell_exec', {'command': 'ls'}), ('run_subagent', {'prompt': 'list files'})
        self.script({'calls': [a]}, {'calls': [b]}, {'text': 'child done'}, {'calls': [a]},
                    {'text': 'done'})
        self.run_bantam()
        results = [m['content'] for m in self.sent() if m['role'] == 'tool']
        self.assertEqual(['exact call' in r for r in results], [False, False, True])

    def test_the_same_subagent_prompt_is_a_repeat_though_the_child_answers_differ(self):
        # A small model asks a child for help again and again; each child answers differently.
        ask = ('run_subagent', {'prompt': 'what is the path of the script?'})
        self.script({'calls': [ask]}, {'text': 'maybe a.py'}, {'calls': [ask]},
                    {'text': 'maybe b.py'}, {'calls': [ask]}, {'text': 'maybe c.py'},
                    {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.stdout.split()[-1], 'done')
        results = [m['content'] for m in self.sent() if m['role'] == 'tool']
        self.assertEqual(['exact call' in r for r in results], [False, True, True])
        self.assertTrue(results[1].startswith('maybe b.py'), results[1])
        self.assertEqual(['tools' in r['body'] for r in self.server.requests],
                         [True] * 6 + [False])

    def test_a_call_made_a_third_time_in_a_turn_makes_it_answer_without_tools(self):
        a, b = ('shell_exec', {'command': 'ls'}), ('shell_exec', {'command': 'pwd'})
        self.script({'calls': [a]}, {'calls': [b]}, {'calls': [a]}, {'calls': [b]},
                    {'calls': [a]}, {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(['tools' in r['body'] for r in self.server.requests],
                         [True] * 5 + [False])
        self.assertEqual(proc.stdout, 'done\n')

    def test_a_call_that_gets_a_new_result_is_not_a_repeat(self):
        # e.g. running the tests again after each edit: the same call, but something changed
        call = ('shell_exec', {'command': 'echo x >> log; wc -l < log'})
        self.script(*[{'calls': [call]}] * 4 + [{'text': 'done'}])
        self.run_bantam()
        results = [m['content'] for m in self.sent() if m['role'] == 'tool']
        self.assertEqual(results, ['%d\n\n\nexit: 0' % n for n in (1, 2, 3, 4)])
        self.assertTrue(all('tools' in r['body'] for r in self.server.requests))

    def test_repeats_in_an_earlier_turn_do_not_count(self):
        call = ('shell_exec', {'command': 'ls'})
        self.script({'calls': [call]}, {'calls': [call]}, {'calls': [call]}, {'text': 'done'},
                    {'calls': [call]}, {'text': 'done again'})
        self.run_repl('list', 'list again')
        self.assertEqual(['tools' in r['body'] for r in self.server.requests],
                         [True, True, True, False, True, True])
        results = [m['content'] for m in self.sent() if m['role'] == 'tool']
        self.assertNotIn('exact call', results[-1])

    def test_repeats_within_one_reply_are_flagged_too(self):
        call = ('shell_exec', {'command': 'true'})
        self.script({'calls': [call, call + ('second',)]}, {'text': 'done'})
        self.run_bantam()
        results = [m['content'] for m in self.sent() if m['role'] == 'tool']
        self.assertEqual(['exact call' in r for r in results], [False, True])

    def test_an_empty_result_says_so(self):
        self.script({'calls': [('shell_exec', {'command': 'true'})]}, {'text': 'ok'})
        self.run_bantam()
        self.assertEqual(self.sent()[-1]['content'], '(no output)\n\nexit: 0')

    def test_the_shell_tool_tells_the_model_to_write_results_in_the_same_command(self):
        self.script({'text': 'ok'})
        self.run_bantam()
        about = {t['function']['name']: t['function']['description']
                 for t in self.server.requests[0]['body']['tools']}
        self.assertIn('cmd > file; cat file', about['shell_exec'])
        self.assertIn('big multi-step task', about['run_subagent'])

    def test_the_default_system_txt_is_short_and_about_the_two_tools(self):
        with open(os.path.join(os.path.dirname(BANTAM), 'system.txt'), 'rb') as f:
            text = f.read()
        self.assertLess(len(text), 2000)
        for word in (b'shell_exec', b'run_subagent'):
            self.assertIn(word, text)

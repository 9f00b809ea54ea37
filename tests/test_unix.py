"""A good Unix citizen: pipeable one-shot output, bounded tool output, well-behaved children,
clean tool text, and what small models are told (empty results, the shell tool's habit)."""
import json
import os
import signal
import subprocess
import sys
import time

from helpers import BANTAM, CMD, BantamCase, alive, wait_until, waiting


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

    @waiting  # "-" is not standard input (README "Known limits")
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

    def test_help_in_the_repl_lists_the_commands(self):
        # --help was cut for lines in round 8 (README "Known limits"); /help stays.
        proc = self.run_repl('/help')
        for word in ('/save', '/list', '/load', '/compact', '/clear', '/help', '/quit'):
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


    def test_a_closed_stdout_ends_the_repl_quietly(self):
        # input() cannot prompt without stdout: the REPL used to print that error in a loop.
        proc = subprocess.run(CMD, cwd=self.cwd, env=self.env(),
                              stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1),
                              input=b'hello\n', timeout=30)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(proc.stderr, b'')
        self.assertEqual(self.server.requests, [])


class BoundedOutput(BantamCase):
    def test_long_output_keeps_its_head_and_its_tail_and_the_exit_line(self):
        # 900 bytes from each end (max_tool_res less 200 for the exit line, halved), the
        # marker between them.
        self.config(max_tool_res=2000)
        command = 'for i in $(seq 1 2000); do echo line $i; done; exit 4'
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'ok'})
        self.run_bantam()
        result = self.sent()[-1]['content']
        self.assertLessEqual(len(result.encode()), 2000)
        everything = ''.join('line %d\n' % i for i in range(1, 2001))
        note = '\n\n[... left out: run the command again with head, tail or grep ...]\n\n'
        self.assertEqual(result, everything[:900] + note + everything[-900:] + '\n\nexit: 4')

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
        self.assertEqual(result, self.sent()[-1]['content'])  # the escaped command too
        self.assertTrue(result.startswith('zerowidth evil bomx [31mred\n' + kept), result)
        for char in '\u200b\u200d\u202e\u202c\ufeff\u2066\u2069\x1b':
            self.assertNotIn(char, result + proc.stderr)
        # The trace shows a hidden character as its escape (issue 54 row 7): seen, not acted on.
        self.assertIn('# \\u200bnote', proc.stderr)


class SmallModels(BantamCase):
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

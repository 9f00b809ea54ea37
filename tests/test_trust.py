"""Trust: nothing left running when Bantam is stopped, nothing lost, errors a newcomer can act
on, a failing child agent that ends the parent's turn with a valid conversation, settings that
are gone stopping Bantam rather than being ignored."""
import os
import signal
import socket

from helpers import ROOT, BantamCase, alive, read, wait_until



class Signals(BantamCase):
    """SIGTERM (timeout, a cancelled CI job) and SIGHUP (a closed terminal) end Bantam with
    128 + the signal number, one line, and no command left running."""

    def sleeper(self):
        """A reply whose command starts a background sleep and waits on another one."""
        self.pidfile = os.path.join(self.cwd, 'pids')
        command = 'sleep 777 & echo $! >> %s; echo $$ >> %s; sleep 777' % ((self.pidfile,) * 2)
        self.script({'calls': [('shell_exec', {'command': command})]}, {'text': 'never'})

    def pids(self):
        self.assertTrue(wait_until(lambda: len(read(self.pidfile).split()) == 2), 'no command')
        return [int(pid) for pid in read(self.pidfile).split()]

    def assert_all_gone(self, pids):
        for pid in pids:
            self.assertTrue(wait_until(lambda: not alive(pid), 5), 'pid %d lives on' % pid)

    def one_shot(self, number):
        self.sleeper()
        proc = self.start_bantam()
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        pids = self.pids()
        proc.send_signal(number)
        out, err = proc.communicate(timeout=15)
        self.assertEqual(proc.returncode, 128 + number)
        self.assert_all_gone(pids)
        name = signal.Signals(number).name
        self.assertEqual(err.splitlines()[-1], 'bantam: stopped by %s' % name)
        self.assertNotIn('Traceback', err)

    def test_sigterm_in_one_shot_mode(self):
        self.one_shot(signal.SIGTERM)

    def test_sighup_in_one_shot_mode(self):
        self.one_shot(signal.SIGHUP)

    def repl(self, number):
        self.sleeper()
        session = self.pty()
        session.expect('> ')
        session.send('start the long job\r')
        pids = self.pids()
        session.proc.send_signal(number)
        self.assertEqual(session.wait(), 128 + number)
        self.assert_all_gone(pids)
        saved = self.autosaved()
        self.assertEqual(saved[1], {'role': 'user', 'content': 'start the long job'})
        self.assertEqual([m['role'] for m in saved], ['system', 'user', 'assistant', 'tool'])
        self.assertIn('interrupted', saved[-1]['content'])
        self.assert_valid_conversation(saved)

    def test_sigterm_in_the_repl_saves_the_turn(self):
        self.repl(signal.SIGTERM)

    def test_sighup_in_the_repl_saves_the_turn(self):
        self.repl(signal.SIGHUP)

    # Ctrl+\ (SIGQUIT) used to kill Bantam at once: the command's group lived on, nothing saved.
    def test_sigquit_in_one_shot_mode(self):
        self.one_shot(signal.SIGQUIT)

    def test_sigquit_in_the_repl_saves_the_turn(self):
        self.repl(signal.SIGQUIT)

    def test_sigterm_at_the_prompt_keeps_the_earlier_autosave(self):
        self.script({'text': 'first answer'})
        session = self.pty()
        session.expect('> ')
        session.send('remember this\r')
        session.expect('first answer')
        self.assertTrue(wait_until(lambda: len(self.autosaved()) == 3))
        session.expect('> ', start=session.text.index('first answer'))
        session.proc.send_signal(signal.SIGTERM)
        self.assertEqual(session.wait(), 143)
        self.assertEqual(len(self.autosaved()), 3)


class NetworkErrors(BantamCase):
    def test_a_refused_connection_names_the_endpoint(self):
        with socket.socket() as s:  # a port with nothing listening on it
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        self.append_config('endpoint=http://127.0.0.1:%d/v1' % port)
        proc = self.start_bantam()
        self.addCleanup(proc.communicate)
        self.addCleanup(proc.kill)
        line = proc.stderr.readline()
        while 'retrying' not in line and line:
            line = proc.stderr.readline()
        self.assertIn('network error at http://127.0.0.1:%d/v1: ' % port, line)
        self.assertIn('refused', line)


class Sessions(BantamCase):
    def test_the_temporary_file_has_a_name_of_its_own(self):
        # Two Bantams autosaving at once must not share a temporary file: with a fixed name
        # (autosave.json.tmp) one could rename the other's half-written file into place. Here
        # that fixed name is taken by a directory, which only a unique name gets around.
        os.makedirs(os.path.join(self.sessions(), 'autosave.json.tmp'))
        self.script({'text': 'kept'})
        proc = self.run_repl('hello')
        self.assertNotIn('Error', proc.stderr)
        self.assertEqual([m['role'] for m in self.autosaved()], ['system', 'user', 'assistant'])
        names = sorted(os.listdir(self.sessions()))
        self.assertEqual(names[1:], ['autosave.json', 'autosave.json.tmp'])
        self.assertRegex(names[0], r'^\d{8}-\d{6}-\w{8}\.json$')  # the conversation, its own id


class ChildFailure(BantamCase):
    def test_a_failing_child_ends_the_turn_and_leaves_a_valid_conversation(self):
        self.script({'calls': [('run_subagent', {'prompt': 'do the hard part'})]},
                    {'status': 400, 'json': {'error': {'message': 'child request refused'}}},
                    {'text': 'next turn'})
        proc = self.run_repl('delegate it', 'and now?')
        self.assertIn('HTTP 400: child request refused', proc.stderr)
        messages = self.sent()
        self.assertEqual([m['role'] for m in messages], ['system', 'user', 'assistant', 'tool',
                                                         'assistant', 'user'])
        self.assertIn('did not finish', messages[3]['content'])
        self.assert_valid_conversation(messages)


class Settings(BantamCase):
    def test_confirm_is_gone_so_a_config_that_asks_for_it_stops_bantam(self):
        # Nothing may run that the user meant to approve: the setting is unknown now.
        self.config(confirm='true', color='never', timeout=10)
        self.script({'calls': [('shell_exec', {'command': 'touch made'})]}, {'text': 'ok'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr, "bantam: KeyError: 'confirm'\n")
        self.assertEqual(self.server.requests, [])
        self.assertFalse(os.path.exists(os.path.join(self.cwd, 'made')))

    def test_the_shipped_model_cfg_loads(self):
        # Every key in it must be one Bantam knows (a removed setting left there stops Bantam).
        with open(os.path.join(ROOT, 'model.cfg')) as f:
            shipped = f.read()
        with open(self.user_file('model.cfg'), 'w') as f:
            f.write(shipped.replace('http://localhost:8080/v1', self.server.url))
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.server.requests[0]['body']['max_tokens'], 1024)

    def test_one_prompt_file_is_the_prompt(self):
        proc = self.run_bantam(self.prompt_file('only this', 'a.txt'))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.sent()[1]['content'], 'only this')


class TokenLimit(BantamCase):
    def test_max_tokens_is_sent_only_when_set(self):
        self.script({'text': 'x.py 4\ny.py 3\nz.py', 'finish': 'length'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0)
        self.assertNotIn('max_tokens', self.server.requests[0]['body'])
        self.assertEqual(proc.stdout, 'x.py 4\ny.py 3\nz.py\n')
        self.assertEqual(self.autosaved(), [])  # one-shot mode does not autosave
        self.config(max_tokens=1024, stream='false')
        self.run_bantam()
        self.assertEqual(self.server.requests[1]['body']['max_tokens'], 1024)

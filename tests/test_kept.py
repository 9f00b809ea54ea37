"""Nothing lost (issue 26): every conversation is kept under an id of its own, ids never collide,
and the autosave stays the current conversation. The REPL runs on a pseudo-terminal."""
import os
import re
import threading
import time

from helpers import BantamCase, wait_until


class Kept(BantamCase):
    def quit(self, session):
        self.ask(session, '/quit', '')
        self.assertEqual(session.wait(), 0)

    def kept(self):
        """{id: saved data} of every session but the autosave."""
        names = [n for n in os.listdir(self.sessions()) if n.endswith('.json')]
        return {n[:-5]: self.read_session(n[:-5]) for n in names if n != 'autosave.json'}

    def conversation(self, first_prompt):
        """The kept sessions whose first prompt is first_prompt."""
        return [s for s in self.kept().values()
                if [m['content'] for m in s['messages'] if m['role'] == 'user'][:1] ==
                [first_prompt]]

    def test_the_previous_repls_conversation_is_kept(self):
        self.script({'text': 'an hour of work'}, {'text': 'a new day'})
        s = self.start_repl()
        self.ask(s, 'yesterday', 'an hour of work')
        self.quit(s)
        s = self.start_repl()
        self.ask(s, 'today', 'a new day')
        self.ask(s, '/list', '> ')
        self.quit(s)
        [old] = self.conversation('yesterday')
        self.assertEqual([m['role'] for m in old['messages']], ['system', 'user', 'assistant'])
        self.assertEqual(old['summary'], 'yesterday')  # no model needed for it
        self.assertEqual(self.autosaved()[1]['content'], 'today')  # autosave: the current one
        self.assertRegex(s.text, r'\d{8}-\d{6}(-\d+)?  \S+ \S+    3 messages  yesterday')

    def test_clear_and_load_keep_the_conversation_they_leave(self):
        self.script({'text': 'one'}, {'text': 'two'}, {'text': 'three'})
        s = self.start_repl()
        self.ask(s, 'first talk', 'one')
        self.ask(s, '/clear', '> ')
        self.ask(s, 'second talk\nwith two lines', 'two')
        [first] = self.conversation('first talk')
        self.ask(s, '/load autosave', '> ')  # the second talk, resumed...
        self.ask(s, 'go on', 'three')
        self.quit(s)
        [second] = self.conversation('second talk\nwith two lines')
        self.assertEqual(second['summary'], 'second talk')
        self.assertEqual(len(second['messages']), 5)
        self.assertEqual(len(first['messages']), 3)
        self.assertEqual(len(self.conversation('first talk')), 1)

    def test_a_conversation_keeps_its_id_while_it_grows(self):
        self.script({'text': 'one'}, {'text': 'two'})
        s = self.start_repl()
        self.ask(s, 'grow', 'one')
        self.ask(s, 'more', 'two')
        self.quit(s)
        self.assertEqual(len(self.kept()), 1)
        self.assertEqual(len(self.conversation('grow')[0]['messages']), 5)

    def test_an_id_that_is_taken_gets_a_suffix(self):
        # The seconds in which this test saves are taken already: a save must not replace them.
        os.makedirs(self.sessions())
        now = time.time()
        taken = [time.strftime('%Y%m%d-%H%M%S', time.localtime(now + i)) for i in range(-1, 20)]
        for sid in taken:
            with open(os.path.join(self.sessions(), sid + '.json'), 'w') as f:
                f.write('{"summary": "someone else\'s", "messages": []}')
        self.script({'text': 'answer'}, {'text': 'Summary one.'}, {'text': 'Summary two.'})
        s = self.start_repl()
        self.ask(s, 'question', 'answer')
        self.ask(s, '/save', 'saved session')
        self.ask(s, '/save', 'saved session')
        self.quit(s)
        for sid in taken:
            self.assertEqual(self.read_session(sid)['summary'], "someone else's")
        ids = re.findall(r'saved session (\S+)', s.text)
        self.assertEqual(len(set(ids)), 2)
        self.assertEqual(sorted(self.read_session(i)['summary'] for i in ids),
                         ['Summary one.', 'Summary two.'])
        self.assertEqual(len(self.conversation('question')), 3)  # its own id and two saves
        for sid in ids:
            self.assertRegex(sid, r'^\d{8}-\d{6}-\d+$')


class NoTwoPromptsInARow(BantamCase):
    """A turn that got no answer leaves its prompt unanswered; the next prompt joins it, so no
    two user messages follow each other (strict chat templates refuse that) and no word is lost."""

    def test_after_an_error_the_next_prompt_joins_the_unanswered_one(self):
        self.script({'status': 401, 'json': {'error': {'message': 'who are you'}}},
                    {'text': 'now I see'})
        proc = self.run_repl('first words', 'second words')
        self.assertIn('HTTP 401', proc.stderr)
        self.assertEqual(self.sent(), [self.sent()[0], {'role': 'user',
                                                        'content': 'first words\n\nsecond words'}])
        self.assertEqual([m['role'] for m in self.autosaved()], ['system', 'user', 'assistant'])

    def test_after_ctrl_c_in_the_first_request_too(self):
        hold = threading.Event()
        self.addCleanup(hold.set)
        self.script({'hold': hold, 'text': 'too late'}, {'text': 'answered'})
        session = self.pty()
        session.expect('> ')
        session.send('slow question\r')
        self.assertTrue(wait_until(lambda: len(self.server.requests) == 1))
        session.send('\x03')
        start = session.expect('[interrupted]')
        session.expect('> ', start=start)
        session.send('next question\r')
        session.expect('answered')
        self.assertEqual([m['role'] for m in self.sent()], ['system', 'user'])
        self.assertEqual(self.sent()[1]['content'], 'slow question\n\nnext question')

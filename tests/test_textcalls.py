"""Tool calls written as text: small models on stock chat templates write the call into the
reply's text, and a server whose parser does not fire passes it on as plain content. Bantam
runs it as a real call when it names an offered tool, and never otherwise."""
import json

from helpers import BantamCase

CALL = {'name': 'shell_exec', 'arguments': {'command': 'echo from-text'}}
BARE = json.dumps(CALL)


class CallsInText(BantamCase):
    def recovered(self, text, **config):
        """Serve text as the whole reply, then 'done'; return (stored reply, tool result, proc)."""
        self.config(**dict({'stream': 'true', 'color': 'never', 'timeout': 10}, **config))
        self.script({'text': text}, {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(self.server.requests), 2, proc.stderr)
        messages = self.sent()
        self.assert_valid_conversation(messages)
        reply, result = messages[2], messages[3]
        [call] = reply['tool_calls']
        self.assertEqual(call['type'], 'function')
        self.assertEqual((call['function']['name'], json.loads(call['function']['arguments'])),
                         ('shell_exec', {'command': 'echo from-text'}))
        self.assertEqual((result['tool_call_id'], result['content']),
                         (call['id'], 'from-text\n\n\nexit: 0'))
        return reply, proc

    def test_bare_json(self):
        reply, proc = self.recovered(BARE)
        self.assertEqual(reply['content'], '')
        self.assertIn(BARE, proc.stdout)  # the text shown stays shown
        self.assertIn('[tool call: shell_exec({"command": "echo from-text"})]', proc.stderr)

    def test_a_json_fence(self):
        self.assertEqual(self.recovered('```json\n%s\n```' % BARE)[0]['content'], '')

    def test_a_plain_fence(self):
        self.assertEqual(self.recovered('```\n%s\n```' % BARE)[0]['content'], '')

    def test_tool_call_tags_inside_a_fence(self):
        text = 'Here it is:\n```json\n<tool_call>\n%s\n</tool_call>\n```' % BARE
        self.assertEqual(self.recovered(text)[0]['content'], 'Here it is:')

    def test_tool_call_tags(self):
        self.assertEqual(self.recovered('<tool_call>\n%s\n</tool_call>' % BARE)[0]['content'], '')

    def test_tools_tags_as_qwen_writes_them_on_the_stock_template(self):
        # Seen live (issue 32): the call wrapped in <tools>, printed as the answer before.
        text = 'Let me check.\n<tools>\n%s\n</tools>' % BARE
        self.assertEqual(self.recovered(text)[0]['content'], 'Let me check.')

    def test_doubled_braces_copied_from_the_template(self):
        self.assertEqual(self.recovered('{%s}' % BARE)[0]['content'], '')

    def test_doubled_braces_with_extra_closing_braces(self):
        self.assertEqual(self.recovered('{%s}}}' % BARE)[0]['content'], '')

    def test_a_sentence_before_the_call_is_kept_as_the_content(self):
        reply, _ = self.recovered('I will print it now.\n```json\n%s\n```' % BARE)
        self.assertEqual(reply['content'], 'I will print it now.')

    def test_arguments_as_a_string_holding_an_object(self):
        text = json.dumps({'name': 'shell_exec', 'arguments': json.dumps(CALL['arguments'])})
        self.recovered(text)

    def test_pretty_printed_and_not_streamed(self):
        self.recovered('```json\n%s\n```' % json.dumps(CALL, indent=2), stream='false')

    def test_a_shell_backslash_left_unescaped_is_read_as_meant(self):
        # seen on llama.cpp's stock template: grep -oE '[a-z]+\.[a-z]+' and find ... {} \;
        text = '{"name": "shell_exec", "arguments": {"command": "echo a.b | grep -c \'a\\.b\'"}}'
        reply = self.run_call(text)
        self.assertEqual(json.loads(reply['tool_calls'][0]['function']['arguments']),
                         {'command': "echo a.b | grep -c 'a\\.b'"})
        self.assertEqual(self.sent()[3]['content'], '1\n\n\nexit: 0')

    def test_a_shell_line_continuation_inside_the_command(self):
        # a backslash before a raw line break is doubled too: bash then joins the two lines
        text = '{"name": "shell_exec", "arguments": {"command": "echo one \\\ntwo"}}'
        self.run_call(text)
        self.assertEqual(self.sent()[3]['content'], 'one two\n\n\nexit: 0')

    def test_a_raw_line_break_inside_the_command(self):
        text = '{"name": "shell_exec", "arguments": {"command": "echo one\necho two"}}'
        self.run_call(text)
        self.assertEqual(self.sent()[3]['content'], 'one\ntwo\n\n\nexit: 0')

    def run_call(self, text):
        self.script({'text': text}, {'text': 'done'})
        proc = self.run_bantam()
        self.assertEqual(len(self.server.requests), 2, proc.stderr)
        return self.sent()[2]

    def test_only_the_call_that_ends_the_reply(self):
        quoted = json.dumps({'name': 'shell_exec', 'arguments': {'command': 'echo quoted'}})
        reply, _ = self.recovered('Not %s but\n```json\n%s\n```\n' % (quoted, BARE))
        self.assertEqual(reply['content'], 'Not %s but' % quoted)


class NotCallsInText(BantamCase):
    def one_turn(self, *replies):
        self.script(*replies)
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc

    def test_a_call_with_words_after_it_stays_text(self):
        proc = self.one_turn({'text': '%s is what the README says to run.' % BARE})
        self.assertEqual(len(self.server.requests), 1)
        self.assertNotIn('[tool call:', proc.stderr)

    def test_a_json_answer_stays_text(self):
        answer = '{"name": "Ada", "age": 36}'
        proc = self.one_turn({'text': answer})
        self.assertEqual(proc.stdout, answer + '\n')
        self.assertEqual(len(self.server.requests), 1)
        self.assertNotIn('[tool call:', proc.stderr)

    def test_an_unknown_tool_or_arguments_that_are_not_an_object_stay_text(self):
        for text in ('{"name": "read_file", "arguments": {"path": "x"}}',
                     '{"name": "shell_exec", "arguments": "ls -la"}',
                     '{"name": "shell_exec", "arguments": 5}',
                     '{"name": "shell_exec", "arguments": {}}',
                     '{"name": "shell_exec"}'):
            self.server.requests.clear()
            proc = self.one_turn({'text': text})
            self.assertEqual(len(self.server.requests), 1, text)
            self.assertNotIn('[tool call:', proc.stderr, text)

    def test_a_reply_with_a_real_call_runs_only_the_real_call(self):
        self.one_turn({'text': BARE, 'calls': [('shell_exec', {'command': 'echo real'})]},
                      {'text': 'done'})
        reply = self.sent()[2]
        self.assertEqual(reply['content'], BARE)
        self.assertEqual([c['function']['arguments'] for c in reply['tool_calls']],
                         ['{"command": "echo real"}'])
        self.assertEqual(self.sent()[3]['content'], 'real\n\n\nexit: 0')

    def test_a_summary_is_never_a_call(self):
        self.script({'text': 'an answer'}, {'text': BARE})
        proc = self.run_repl('question', '/compact', '/quit')
        self.assertEqual(len(self.server.requests), 2, proc.stderr)
        self.assertNotIn('tools', self.server.requests[1]['body'])
        self.assertIn(BARE, self.autosaved()[1]['content'])

    def test_a_child_agent_cannot_call_run_subagent_as_text(self):
        nested = json.dumps({'name': 'run_subagent', 'arguments': {'prompt': 'go deeper'}})
        self.one_turn({'calls': [('run_subagent', {'prompt': 'do it'})]}, {'text': nested},
                      {'text': 'parent done'})
        self.assertEqual(len(self.server.requests), 3)
        self.assertEqual(self.sent()[-1]['content'], nested)  # the child's answer, as text

"""How a reply is put together: what goes back is what the model wrote.

A streamed list's entry continues the last one when it is the same block streamed on (same type
and index, no other id, the last not yet signed), so OpenRouter's reasoning_details go back as
the blocks the model wrote; the role and words are Bantam's own. A refusal leaves out any field
it names (a field it calls missing too: README "Known limits")."""
import json
import os

from helpers import FIXTURES, BantamCase, waiting

SENT_BACK = os.path.join(FIXTURES, 'sent-back')
CLAUDE = 'anthropic-claude-v1'


def stream(*deltas, finish='stop'):
    """A reply streamed as these deltas (as the issue quotes them), a finish chunk and [DONE]."""
    def event(delta, reason=None):
        choice = {'index': 0, 'delta': delta, 'finish_reason': reason}
        return b'data: ' + json.dumps({'choices': [choice]}).encode() + b'\n\n'
    raw = b''.join(event(d) for d in deltas) + event({}, finish) + b'data: [DONE]\n\n'
    return {'raw': raw, 'type': 'text/event-stream'}


def refusal(name):
    with open(os.path.join(SENT_BACK, name + '.json'), 'rb') as f:
        return {'raw': f.read(), 'code': 400, 'type': 'application/json'}


def call_delta(call_id='call_1', index=0, command='echo step'):
    return {'tool_calls': [{'index': index, 'id': call_id, 'type': 'function', 'function': {
        'name': 'shell_exec', 'arguments': json.dumps({'command': command})}}]}


def details(**entry):
    return {'reasoning_details': [entry]}


# OpenRouter's Claude stream with reasoning, as issue 37 quotes it (each chunk's delta).
CLAUDE_THINKING = [
    {'role': 'assistant', 'content': '', 'reasoning': None, 'reasoning_details': [
        {'type': 'reasoning.text', 'text': '', 'signature': '', 'format': CLAUDE, 'index': 0}]},
    {'reasoning': 'I should', 'reasoning_details': [
        {'type': 'reasoning.text', 'text': 'I should', 'format': CLAUDE, 'index': 0}]},
    {'reasoning': ' list files.', 'reasoning_details': [
        {'type': 'reasoning.text', 'text': ' list files.', 'format': CLAUDE, 'index': 0}]},
    {'reasoning_details': [
        {'type': 'reasoning.text', 'signature': 'EqQBCkgIBxABGAIqQFAKE', 'format': CLAUDE,
         'index': 0}]},
]
SIGNED = {'type': 'reasoning.text', 'text': 'I should list files.',
          'signature': 'EqQBCkgIBxABGAIqQFAKE', 'format': CLAUDE}


class Rebuilt(BantamCase):
    def replies_sent_back(self, proc, requests=2):
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        self.assertEqual(len(self.server.requests), requests, proc.stderr[-800:])
        return [m for m in self.sent() if m['role'] == 'assistant']

    def test_openrouter_claude_goes_back_as_one_signed_block(self):
        self.script(stream(*CLAUDE_THINKING, call_delta(), finish='tool_calls'),
                    stream({'content': 'Listed.'}))
        proc = self.run_bantam()
        reply, = self.replies_sent_back(proc)
        self.assertEqual(reply['reasoning_details'], [SIGNED])  # index: a streaming detail
        self.assertEqual(reply['reasoning'], 'I should list files.')
        self.assertEqual(proc.stdout.count('I should list files.'), 1)

    def test_the_recorded_openrouter_claude_stream_goes_back_whole(self):
        # pydantic-ai's recording of anthropic/claude-sonnet-4.5 through OpenRouter
        with open(os.path.join(FIXTURES, 'openrouter-reasoning-claude.sse'), 'rb') as f:
            self.script({'raw': f.read(), 'type': 'text/event-stream'}, {'text': 'yes'})
        proc = self.run_repl('what is 2+2?', 'sure?')
        reply, = self.replies_sent_back(proc)
        entry, = reply['reasoning_details']
        self.assertEqual(entry['text'], 'This is a simple arithmetic question. 2+2 equals 4.')
        self.assertTrue(entry['signature'].startswith('Et0BCkgIChACGAIqQA2s7h7t'))
        self.assertEqual((entry['type'], entry['format']), ('reasoning.text', CLAUDE))

    def test_gpt5_summaries_join_and_the_encrypted_entry_stays_its_own(self):
        fmt = 'openai-responses-v1'
        self.script(stream(
            details(type='reasoning.summary', summary='**Plan', format=fmt, index=0),
            details(type='reasoning.summary', summary='ning**', format=fmt, index=0),
            details(type='reasoning.encrypted', data='gAAAAB-secret', id='rs_0aa4', format=fmt,
                    index=1),
            details(type='reasoning.summary', summary='**Run', format=fmt, index=2),
            details(type='reasoning.summary', summary='ning**', format=fmt, index=2),
            call_delta(), finish='tool_calls'), stream({'content': 'Done.'}))
        reply, = self.replies_sent_back(self.run_bantam())
        self.assertEqual(reply['reasoning_details'], [
            {'type': 'reasoning.summary', 'summary': '**Planning**', 'format': fmt},
            {'type': 'reasoning.encrypted', 'data': 'gAAAAB-secret', 'id': 'rs_0aa4',
             'format': fmt},
            {'type': 'reasoning.summary', 'summary': '**Running**', 'format': fmt}])

    def test_gemini_two_signed_entries_stay_two(self):
        fmt = 'google-gemini-v1'
        self.script(stream(
            details(type='reasoning.text', text='Two', format=fmt, index=0),
            details(type='reasoning.text', text=' calls.', format=fmt, index=0),
            details(type='reasoning.encrypted', data='c2lnLW9uZQ==', id='tool_1', format=fmt,
                    index=0),
            details(type='reasoning.encrypted', data='c2lnLXR3bw==', id='tool_2', format=fmt,
                    index=0),
            call_delta('tool_1', 0), call_delta('tool_2', 1), finish='tool_calls'),
            stream({'content': 'Both ran.'}))
        reply, = self.replies_sent_back(self.run_bantam())
        self.assertEqual([e.get('text') or e.get('data') for e in reply['reasoning_details']],
                         ['Two calls.', 'c2lnLW9uZQ==', 'c2lnLXR3bw=='])
        self.assertEqual([c['id'] for c in reply['tool_calls']], ['tool_1', 'tool_2'])

    def test_entries_of_one_chunk_are_blocks_of_their_own(self):
        # OpenRouter's web search sends its citations in one chunk, without index or id; a
        # plain reply's list is whole. Neither is merged into one entry.
        cite = [{'type': 'url_citation', 'url_citation': {'url': u, 'title': u}}
                for u in ('https://a.example', 'https://b.example')]
        message = {'role': 'assistant', 'content': 'See both.', 'annotations': cite}
        plain = {'raw': json.dumps({'choices': [{'index': 0, 'message': message,
                                                 'finish_reason': 'stop'}]}).encode(),
                 'type': 'application/json'}
        for first in (stream({'content': 'See both.', 'annotations': cite}), plain):
            self.server.requests.clear()
            self.script(first, {'text': 'ok'})
            proc = self.run_repl('find two pages', 'thanks')
            reply, = [m for m in self.sent() if m['role'] == 'assistant']
            self.assertEqual(reply['annotations'], cite, proc.stderr[-800:])

class Owned(BantamCase):
    def test_the_role_is_assistant_whatever_the_server_writes(self):
        for role in ('model', 'user'):
            self.server.requests.clear()
            self.script(stream({'role': role, 'content': 'Running it.'}, call_delta(),
                               finish='tool_calls'), stream({'content': 'Done.'}))
            proc = self.run_bantam()
            self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
            roles = [m['role'] for m in self.sent()]
            self.assertEqual(roles, ['system', 'user', 'assistant', 'tool'], role)

    def test_two_calls_with_a_null_index_and_ids_of_their_own_are_two(self):
        first = call_delta('call_a', None, 'echo one')
        second = call_delta('call_b', None, 'echo two')
        self.script(stream(first, second, finish='tool_calls'), stream({'content': 'Done.'}))
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        reply = self.sent()[2]
        self.assertEqual([c['id'] for c in reply['tool_calls']], ['call_a', 'call_b'])
        self.assertEqual([m['content'].split('\n')[0] for m in self.sent()[3:]], ['one', 'two'])
        self.assertNotIn('index', json.dumps(reply))  # a streaming detail, never sent back


class ReadForWhatItSays(BantamCase):
    """A refusal that says a field is missing or invalid leaves it in; one that calls it
    unwanted leaves it out, once (the Groq case is in test_sent_back)."""

    def later_request_keeps(self, first, body, field):
        self.script(first, refusal(body), {'text': 'back again'})
        proc = self.run_repl('first', 'second', 'third')
        self.assertEqual(len(self.server.requests), 3, proc.stderr[-800:])
        self.assertNotIn('refused', proc.stderr)
        self.assertIn('HTTP 400', proc.stderr)
        self.assertIn('back again', proc.stdout)
        for request in self.server.requests[1:]:
            kept = [m for m in request['body']['messages'] if m['role'] == 'assistant']
            self.assertIn(field, json.dumps(kept))
        return proc

    @waiting  # any field a refusal names goes (README "Known limits")
    def test_anthropic_through_openrouter_invalid_signature_strips_nothing(self):
        proc = self.later_request_keeps(stream(*CLAUDE_THINKING, {'content': 'Hi.'}),
                                        'openrouter-400-anthropic-invalid-signature', 'signature')
        self.assertIn('Provider returned error', proc.stderr)

    @waiting  # any field a refusal names goes (README "Known limits")
    def test_deepseek_missing_reasoning_strips_nothing(self):
        self.later_request_keeps(stream({'reasoning_content': 'Think first.'}, {'content': 'Hi.'}),
                                 'deepseek-400-missing-reasoning-content', 'Think first.')

    def test_gemini_unknown_name_with_escaped_quotes_is_left_out_once(self):
        def gemini(request):
            if any('reasoning_content' in m for m in request['messages']):
                return refusal('gemini-400-unknown-name-reasoning-content')
            if len(request['messages']) > 2:
                return stream({'content': 'Done.'})
            return stream({'reasoning_content': 'Plan.'}, call_delta(), finish='tool_calls')
        self.server.default = gemini
        proc = self.run_bantam()
        self.assertEqual(proc.returncode, 0, proc.stderr[-800:])
        self.assertEqual(len(self.server.requests), 3)
        notice, = [line for line in proc.stderr.splitlines() if 'refused' in line]
        self.assertTrue(notice.startswith('the server refused reasoning_content (HTTP 400: '))

#!/usr/bin/env python3
"""A scripted OpenAI-compatible /chat/completions server for Bantam's tests (stdlib only).

Each POST takes the next reply from the script and records the request. A reply is a dict:

  {'text': 'hi', 'reasoning': 'hmm', 'calls': [('shell_exec', {'command': 'ls'})],
   'finish': 'stop', 'usage': {...}}    streamed as SSE when the request asks for it, else JSON
  {'status': 429, 'json': {...}, 'headers': {'Retry-After': '2'}}   an HTTP error
  {'raw': b'...', 'type': 'text/event-stream', 'chunk': 1}          bytes as they are
  {'drop': True}                         close the connection without an answer
  {'cut': 3}                             stream the first 3 events, then close (no [DONE])
  {'stall': 5, 'after': 2}               stream 2 events, wait 5 s, then the rest
  {'hold': threading.Event()}            wait for the event (or 30 s) before answering
  a callable                             called with the request body, returns one of the above

Run it alone for offline trials:  python3 tests/fake_server.py [PORT]
It then plays a tiny "echo model": a prompt starting with "$ " becomes a shell_exec call.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def sse(obj):
    return b'data: ' + json.dumps(obj).encode() + b'\n\n'


def chunk(delta=None, finish=None, usage=None):
    out = {'id': 'chatcmpl-fake', 'object': 'chat.completion.chunk', 'model': 'fake',
           'choices': [{'index': 0, 'delta': delta or {}, 'finish_reason': finish}]}
    if usage is not None:
        out['usage'] = usage
    return out


def tool_calls(spec):
    calls = []
    for i, call in enumerate(spec.get('calls') or []):
        name, args = call[0], call[1]
        call_id = call[2] if len(call) > 2 else 'call_%d' % i
        calls.append({'id': call_id, 'type': 'function', 'function': {
            'name': name, 'arguments': args if isinstance(args, str) else json.dumps(args)}})
    return calls


def stream_events(spec, include_usage):
    """The SSE events of a reply spec, as bytes, [DONE] included."""
    events = [sse(chunk({'role': 'assistant', 'content': None}))]
    for piece in [spec['reasoning']] if spec.get('reasoning') else []:
        events.append(sse(chunk({'reasoning_content': piece})))
    text = spec.get('text', '')
    pieces = spec.get('pieces') or ([text[i:i + 7] for i in range(0, len(text), 7)] if text else [])
    events += [sse(chunk({'content': piece})) for piece in pieces]
    for i, call in enumerate(tool_calls(spec)):
        args = call['function']['arguments']
        half = len(args) // 2
        events.append(sse(chunk({'tool_calls': [{'index': i, 'id': call['id'], 'type': 'function',
                                                  'function': {'name': call['function']['name'],
                                                               'arguments': ''}}]})))
        for part in (args[:half], args[half:]):
            fragment = {'index': i, 'function': {'arguments': part}}
            events.append(sse(chunk({'tool_calls': [fragment]})))
    finish = spec.get('finish') or ('tool_calls' if spec.get('calls') else 'stop')
    events.append(sse(chunk({}, finish)))
    if include_usage and spec.get('usage'):
        events.append(sse({'id': 'chatcmpl-fake', 'choices': [], 'usage': spec['usage']}))
    events.append(b'data: [DONE]\n\n')
    return events


def json_body(spec):
    message = {'role': 'assistant', 'content': spec.get('text', '')}
    if spec.get('reasoning'):
        message['reasoning_content'] = spec['reasoning']
    if spec.get('calls'):
        message['tool_calls'] = tool_calls(spec)
    finish = spec.get('finish') or ('tool_calls' if spec.get('calls') else 'stop')
    body = {'id': 'chatcmpl-fake', 'object': 'chat.completion', 'model': 'fake',
            'choices': [{'index': 0, 'message': message, 'finish_reason': finish}]}
    if spec.get('usage'):
        body['usage'] = spec['usage']
    return json.dumps(body).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def do_GET(self):  # recorded too: a client that follows a redirect comes back with a GET
        with self.server.fake.lock:
            self.server.fake.requests.append({'path': self.path, 'headers': dict(self.headers),
                                              'body': None, 'raw': b'', 'time': time.monotonic()})
        self.send_response(404)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def do_POST(self):
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get('Content-Length') or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with fake.lock:
            fake.requests.append({'path': self.path, 'headers': dict(self.headers),
                                  'body': body, 'raw': raw, 'time': time.monotonic()})
            spec = fake.replies.pop(0) if fake.replies else fake.default
        if callable(spec):
            spec = spec(body)
        if spec.get('hold'):
            spec['hold'].wait(30)
        if spec.get('delay'):
            time.sleep(spec['delay'])
        if spec.get('drop'):
            self.close_connection = True
            return
        if 'status' in spec or 'json' in spec:
            payload = json.dumps(spec.get('json', {})).encode()
            return self.answer(spec.get('status', 200), 'application/json', [payload], spec)
        if 'raw' in spec:
            data, size = spec['raw'], spec.get('chunk') or len(spec['raw']) or 1
            parts = [data[i:i + size] for i in range(0, len(data), size)]
            return self.answer(spec.get('code', 200), spec.get('type', 'text/event-stream'),
                               parts, spec)
        if body and body.get('stream'):
            include = bool((body.get('stream_options') or {}).get('include_usage'))
            events = stream_events(spec, include)
            if 'cut' in spec:
                events = events[:spec['cut']]
            return self.answer(200, 'text/event-stream', events, spec)
        return self.answer(200, 'application/json', [json_body(spec)], spec)

    def answer(self, status, ctype, parts, spec):
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        for key, value in (spec.get('headers') or {}).items():
            self.send_header(key, value)
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        try:
            for i, part in enumerate(parts):
                if spec.get('stall') and i == spec.get('after', 1):
                    time.sleep(spec['stall'])
                self.wfile.write(b'%x\r\n%s\r\n' % (len(part), part))
                self.wfile.flush()
            if 'cut' in spec:
                self.close_connection = True
                return
            self.wfile.write(b'0\r\n\r\n')
            self.wfile.flush()
        except OSError:
            self.close_connection = True


class FakeServer:
    """Serve a list of scripted replies on 127.0.0.1, in a thread, and record the requests."""

    def __init__(self, replies=(), default=None, port=0):
        self.replies, self.requests = list(replies), []
        self.default = default or {'text': 'OK'}
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(('127.0.0.1', port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self):
        return 'http://127.0.0.1:%d/v1' % self.httpd.server_address[1]

    def bodies(self):
        return [r['body'] for r in self.requests]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def echo_model(body):
    """The offline trial model: '$ cmd' runs cmd through shell_exec; anything else is echoed."""
    last = body['messages'][-1]
    if last['role'] == 'tool':
        return {'text': 'The command printed:\n' + last['content']}
    prompt = last.get('content') or ''
    if prompt.startswith('$ ') and body.get('tools'):
        return {'calls': [('shell_exec', {'command': prompt[2:]})]}
    return {'text': 'You said: ' + prompt, 'reasoning': 'The user wrote something; echo it.',
            'usage': {'prompt_tokens': 42, 'completion_tokens': 7}}


if __name__ == '__main__':
    server = FakeServer(default=echo_model, port=int(sys.argv[1]) if len(sys.argv) > 1 else 8080)
    print('fake model at %s (endpoint=%s); Ctrl+C stops it' % (server.url, server.url), flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()

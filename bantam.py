#!/usr/bin/env python3
# Bantam: a tiny agent that gives an OpenAI-compatible model two tools, a shell and itself.
# Usage: bantam.py [prompt.txt | -] ...   (no argument: the REPL; -h: help)
# The file reads in the order of the README's algorithm: configuration, chat client, tools,
# agentic loop, sessions, REPL, main.
import contextlib, http.client, json, os, re, signal, subprocess, sys, tempfile, termios, time
import pathlib, urllib.error, urllib.request

# ---------------------------------------------------------------- configuration
DEFAULTS = dict(endpoint='https://api.openai.com/v1', model='gpt-4o', temperature=0.7, api_key='',
                stream=True, color='auto', timeout=60, shell_timeout=120, max_al_iterations=1000,
                max_tool_res=32768, max_tokens=4096, reasoning_effort='', confirm=False)
SYSTEM = 'You are a terminal agent: act with shell_exec, check results, then answer briefly.'
HERE, HOME = os.path.dirname(os.path.abspath(__file__)), os.path.expanduser('~')
SESSIONS, HISTORY = os.path.join(HOME, '.bantam', 'sessions'), os.path.join(HOME, '.bantam_history')
SHELL = '/bin/bash' if os.path.exists('/bin/bash') else None  # models write bash
RETRY = (408, 409, 425, 429)  # and every 5xx: worth another try
STYLES = dict(status='1;90', marker='36', think='2', call='33', result='32', body='2', error='31')
# What acts on a terminal or hides text: C0 and C1 controls (not tab or newline), direction marks
# and overrides, zero-width and other invisible characters, Unicode tags.
HIDDEN = re.compile('[\0-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u202a-\u202e'
                    '\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]')


class Fail(Exception): pass  # an error that ends a turn, or a tool call, with one line


def local_text(name, default=''):  # a file in the current directory, else beside the script
    path = next(filter(os.path.isfile, [os.path.join(d, name) for d in (os.getcwd(), HERE)]), None)
    return pathlib.Path(path).read_text('utf-8-sig') if path else default  # a BOM is allowed


def load_config():
    # Built-in defaults < model.cfg; a value is parsed as its default's type. A bad line is named
    # by its number, never by its text: it may be a pasted key.
    cfg = dict(DEFAULTS)
    for number, line in enumerate(local_text('model.cfg').splitlines(), 1):
        if line.strip() and line.strip()[0] != '#':
            try:
                key, value = map(str.strip, line.split('=', 1))  # no "=": a ValueError
                kind = type(DEFAULTS[key])
                cfg[key] = {'true': True, 'false': False}[value] if kind is bool else kind(value)
            except (KeyError, ValueError):
                raise Fail('bad setting on line %d of model.cfg (see bantam.py --help)' % number)
    if os.getenv('NO_COLOR') or os.getenv('BANTAM_NO_COLOR'): cfg['color'] = 'never'
    key = os.environ.pop('OPENAI_API_KEY', '')  # out of the environment tool commands inherit
    cfg['api_key'] = (cfg['api_key'] or key).strip()
    cfg['system'] = local_text('system.txt', SYSTEM).strip()
    return cfg


def clean(cfg, text):  # outside text made inert: no hidden character, no API key
    text = HIDDEN.sub('', text)  # (a "key" under 24 characters, like ollama, is no secret)
    return text.replace(cfg['api_key'], '[api key]') if len(cfg['api_key']) >= 24 else text


def say(cfg, text, style='', out=sys.stderr, end='\n'):  # shown, so cleaned; words to stdout
    text = clean(cfg, str(text))
    if style in STYLES and (cfg['color'] == 'always' or (cfg['color'] == 'auto' and out.isatty())):
        text = '\033[%sm%s\033[0m' % (STYLES[style], text)
    out.write(text + end)
    out.flush()


def parse_json(text):  # a JSON object, or {} for anything else
    with contextlib.suppress(ValueError):
        value = json.loads(text)
        return value if isinstance(value, dict) else {}
    return {}


# ---------------------------------------------------------------- chat client
MARKERS = {'think': '--- reasoning start ---', 'text': '--- reasoning end ---'}
AGENT = 'Mozilla/5.0 (compatible; Bantam/1.0)'  # some gateways refuse unknown clients


def chat(cfg, messages, tools):
    # Send the conversation, retry on the Fibonacci schedule; return (reply, finish).
    body = {'tools': [SCHEMAS[name] for name in tools], 'max_tokens': cfg['max_tokens'],
            'reasoning_effort': cfg['reasoning_effort']}  # each sent only when it has a value
    body = dict({k: v for k, v in body.items() if v}, model=cfg['model'], messages=messages,
                temperature=cfg['temperature'], stream=cfg['stream'])
    request = urllib.request.Request(cfg['endpoint'].rstrip('/') + '/chat/completions', json.dumps(
        body).encode(), {'Content-Type': 'application/json', 'User-Agent': AGENT})
    # Unredirected: a redirect never takes the key to another host.
    if cfg['api_key']: request.add_unredirected_header('Authorization', 'Bearer ' + cfg['api_key'])
    for delay in (1, 1, 2, 3, 5, None):
        try:
            with urllib.request.urlopen(request, timeout=cfg['timeout']) as response:
                return read_reply(cfg, response)
        # Retry 408, 409, 425, 429 and 5xx, else fail at once.
        except urllib.error.HTTPError as e:
            text, after = e.read().decode('utf-8', 'replace'), e.headers.get('Retry-After', '')
            after = int(after) if after.isdigit() else 0
            why = explain('HTTP %d' % e.code, parse_json(text).get('error') or text[:500])
            if after > 60 or 'insufficient_quota' in text or (e.code < 500 and e.code not in RETRY):
                raise Fail(why)
        except (OSError, http.client.HTTPException) as e:  # refused, timed out, cut off...
            why, after = ('network error at %s: %s (is a server running there? see endpoint= '
                          'in model.cfg)' % (cfg['endpoint'], getattr(e, 'reason', None) or e)), 0
        if delay is None: raise Fail('%s (gave up after 5 retries)' % why)
        say(cfg, '%s; retrying in %d s' % (why, max(delay, after)), 'error')
        time.sleep(max(delay, after))


def explain(status, error):  # the status and the server's own message, on one line
    error = (error.get('message') or json.dumps(error)) if isinstance(error, dict) else error
    return ' '.join(('%s: %s' % (status, error)).split())


def events(response):
    # The JSON object of each "data:" line of a server-sent event stream, up to [DONE];
    # a plain JSON body is read as a one-line stream (JSON keeps no raw newline in a string).
    lines = ([b'data: ' + b' '.join(response.read().splitlines()), b'data: [DONE]']
             if 'json' in response.headers.get('Content-Type', '') else response)
    for line in lines:
        field, _, value = line.decode('utf-8', 'replace').partition(':')
        if field == 'data' and value.strip() == '[DONE]':
            yield {'choices': [{'finish_reason': 'stop'}]}  # complete, even without one
            return
        if field == 'data':
            yield parse_json(value)


def read_reply(cfg, response):
    # Read a reply as it arrives and print its words live; return (message, finish).
    text, calls, finish, mode, newline = [], {}, None, 'text', ''  # a marker's line break
    try:
        for chunk in events(response):
            if chunk.get('error'): raise Fail(explain('server error', chunk['error']))
            for choice in [c for c in chunk.get('choices') or [] if c.get('index', 0) == 0]:
                finish = finish or choice.get('finish_reason')
                delta = choice.get('delta') or choice.get('message') or {}
                for fragment in delta.get('tool_calls') or []:
                    add_fragment(calls, fragment)
                # Printed as it comes; when reasoning starts or ends, a marker on a line of its own.
                for kind, piece in pieces(delta):
                    if not piece or not isinstance(piece, str): continue
                    if kind != mode:
                        say(cfg, newline + MARKERS[kind], 'marker', sys.stdout)
                    mode, newline = kind, '' if piece.endswith('\n') else '\n'
                    if kind == 'text': text.append(piece)  # reasoning is shown, never kept
                    say(cfg, piece, kind, sys.stdout, '')
    finally:  # close the reasoning block, or end the last line
        if mode == 'think': say(cfg, newline + MARKERS['text'], 'marker', sys.stdout)
        elif newline: say(cfg, '', out=sys.stdout)
    if not finish: raise ConnectionError('the reply stream ended early')
    reply = {'role': 'assistant', 'content': ''.join(text)}
    return (dict(reply, tool_calls=list(calls.values())) if calls else reply), finish


def pieces(d):  # the (kind, text) pieces of a delta d: its reasoning, then its words
    yield 'think', d.get('reasoning_content') or d.get('reasoning') or d.get('reasoning_text')
    content = d.get('content')
    for part in (content if isinstance(content, list) else [content]) + [d.get('refusal')]:
        yield 'text', part.get('text') if isinstance(part, dict) else part  # a part of a list


def new_call(name='', arguments=''):  # with an id of our own: some servers send none
    return {'id': 'call_%s' % os.urandom(6).hex(), 'type': 'function',
            'function': {'name': name, 'arguments': arguments}}


def add_fragment(calls, fragment):  # by index; else a fragment with an id is a new call
    key = fragment.get('index', len(calls) - (0 if fragment.get('id') else 1))
    call = calls.setdefault(key, new_call())
    function, part = call['function'], fragment.get('function') or {}
    call['id'] = fragment.get('id') or call['id']
    function['name'] = function['name'] or part.get('name') or ''  # some repeat it each time
    function['arguments'] += part.get('arguments') or ''


# All that may follow a call written as text: white space, fences, a closing tag, stray braces.
WRAPPING = re.compile(r'(\s|```|</tool_call>|\})*')


def call_in_text(reply, tools):
    # Small models on stock chat templates often write their call as text: bare JSON, fenced,
    # in <tool_call> tags or in doubled braces. A JSON object that ends the reply (only its
    # wrapping follows), names an offered tool and has arguments becomes a real call, and the
    # text keeps only the words before it; an object quoted inside an answer stays text. Models
    # often leave a shell backslash unescaped (\. or \;) inside the JSON: it is doubled, as meant.
    text = re.sub(r'(\\[\\"/bfnrtu])|(\\)', r'\1\2\2', reply['content'])
    for start in [m.start() for m in re.finditer('{', text)]:
        with contextlib.suppress(ValueError, RecursionError):
            found, end = json.JSONDecoder(strict=False).raw_decode(text, start)
            if not WRAPPING.fullmatch(text, end): continue  # words follow: not the end
            args = found.get('arguments')
            args = args if isinstance(args, str) else json.dumps(args)
            if found.get('name') not in tools or not parse_json(args): break  # text after all
            words = text[:start].rstrip().rstrip('{').rstrip()  # its wrapping goes with it:
            words = re.sub(r'(```\w*\s*)?(<tool_call>)?$', '', words).rstrip()  # fence, tag
            return dict(reply, content=words, tool_calls=[new_call(found['name'], args)])
    return reply


# ---------------------------------------------------------------- tools
GAP = '\n\n[... %d bytes left out: see them with head, tail or grep ...]\n\n'


def clip(f, limit):  # a file's text; past limit bytes, only its head and its tail
    size, half = f.seek(0, 2), limit // 2
    head, tail = os.pread(f.fileno(), half, 0), os.pread(f.fileno(), half, max(half, size - half))
    gap = (GAP % (size - 2 * half)).encode() if size > 2 * half else b''
    return (head + gap + tail).decode('utf-8', 'replace')


def shell_exec(cfg, command):
    # With confirm, the exact command is shown first, as a Python string literal (so nothing in it
    # can hide); Enter or yes runs it, and any other answer goes to the model as the reason.
    if cfg['confirm']:
        # Keys pressed before the question (an Enter while the model was thinking) are no answer.
        if sys.stdin.isatty(): termios.tcflush(sys.stdin, termios.TCIFLUSH)
        say(cfg, '%r\nRun it? [Enter or y; or say why not] ' % command, 'status', end='')
        answer = (sys.stdin.readline() or 'n').strip() if sys.stdin.isatty() else 'no terminal'
        if answer.lower() not in ('', 'y', 'yes'): return 'error: not run; the user said: ' + answer
    # Output goes to a file, not a pipe, so a background child cannot hold the call open.
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(command, shell=True, executable=SHELL, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, start_new_session=True)
        try:
            code = proc.wait(cfg['shell_timeout'])
        except subprocess.TimeoutExpired:
            code = 'killed after the %d s shell_timeout' % cfg['shell_timeout']
        finally:
            if proc.returncode is None:  # timeout, Ctrl+C or a signal: kill the whole group
                os.killpg(proc.pid, signal.SIGKILL)
        output = clip(out, cfg['max_tool_res'] - 200) or '(no output)'
    return clean(cfg, output) + '\n\nexit: %s' % code


def run_subagent(cfg, prompt):  # a fresh child conversation through the same loop
    child = [{'role': 'system', 'content': cfg['system'] + '\n\nImportant: this is a child agent'}]
    # No run_subagent: a child cannot fork forever.
    agent_loop(cfg, child, prompt, ['shell_exec'])
    answer = child[-1]['content'] if child[-1]['role'] == 'assistant' else ''
    return clean(cfg, answer[:cfg['max_tool_res']]) or '(no answer)'


# Small models heed a tool's description more than the system prompt: it carries the key habit.
TOOLS = {'shell_exec': ('command', shell_exec, 'Run a bash command; returns output and exit code. '
                        'To save a result, the same command writes it: cmd > file; cat file. '
                        'Read the output: if it is not right yet, run the next command.'),
         'run_subagent': ('prompt', run_subagent, 'Only for a big multi-step task: a child agent.')}


SCHEMAS = {name: {'type': 'function', 'function': {'name': name, 'description': about,
           'parameters': {'type': 'object', 'properties': {param: {'type': 'string'}},
                          'required': [param]}}} for name, (param, _, about) in TOOLS.items()}


def run_tool(cfg, call, tools):  # check a call, trace it, run it; return the result
    name, raw = call['function']['name'], call['function']['arguments'] or '{}'
    say(cfg, '[tool call: %s(%s)]' % (name, raw), 'call')
    call['function']['arguments'] = raw if parse_json(raw) else '{}'  # servers reparse it
    param, tool, _ = TOOLS[name] if name in tools else ('', None, '')
    arg = parse_json(raw).get(param)
    why = 'no %s argument as a JSON string' % param if tool else 'there is no tool %r' % name
    usage = ', '.join('%s({"%s": "..."})' % (t, TOOLS[t][0]) for t in tools)
    ok = tool and isinstance(arg, str)
    result = tool(cfg, arg) if ok else 'error: %s; use %s' % (why, usage)
    say(cfg, '[tool result: %s]' % name, 'result')
    say(cfg, result, 'body' if ok else 'error')
    return result


# ---------------------------------------------------------------- agentic loop
INTERRUPTED = 'error: this call did not finish (interrupted)'
REPEATED = '\n\nNote: you already made this exact call. Answer now, or try something else.'


def agent_loop(cfg, messages, prompt, tools):
    # One turn: add the prompt, then ask the model and run the tools it calls, until it calls none.
    done = []  # (call, result) of each call run in this turn: repeats count within the turn
    messages.append({'role': 'user', 'content': prompt})
    for _ in range(cfg['max_al_iterations']):
        # The same round a third time: no tools, so the model answers in words.
        offered = [] if done and done.count(done[-1]) > 2 else tools
        say(cfg, '...requesting...', 'status')
        reply, finish = chat(cfg, messages, offered)
        reply = reply if reply.get('tool_calls') or not offered else call_in_text(reply, offered)
        calls = reply.get('tool_calls')
        if finish == 'length': say(cfg, '[the reply was cut off by the token limit]', 'error')
        if reply['content'] or calls: messages.append(reply)  # never an empty message
        if not calls: return
        answers = [{'role': 'tool', 'tool_call_id': c['id'], 'content': INTERRUPTED} for c in calls]
        # Answered in advance: an interruption leaves a valid conversation.
        messages += answers
        for call, answer in zip(calls, answers):
            answer['content'] = run_tool(cfg, call, tools)
            # A round is the call and its result; a child answers differently every time, so
            # a run_subagent round is its prompt alone.
            seen = answer['content'] if call['function']['name'] == 'shell_exec' else ''
            done.append((call['function'], seen))
            answer['content'] += REPEATED if done[-1] in done[:-1] else ''
    say(cfg, '[stopped after max_al_iterations=%d requests]' % cfg['max_al_iterations'], 'error')


# ---------------------------------------------------------------- sessions
def save_session(messages, sid, summary):
    # Atomically: a private file with a name no other Bantam uses, then a rename over the old one.
    os.makedirs(SESSIONS, 0o700, exist_ok=True)
    with tempfile.NamedTemporaryFile('w', prefix=sid + '.', dir=SESSIONS, delete=False) as f:
        json.dump(dict(time=time.strftime('%F %T'), summary=summary, messages=messages), f)
    os.replace(f.name, os.path.join(SESSIONS, sid + '.json'))


def sessions():  # {id: its saved data}, newest first
    paths = sorted(pathlib.Path(SESSIONS).glob('*.json'), key=os.path.getmtime, reverse=True)
    return {path.stem: parse_json(path.read_bytes()) for path in paths}


def load_session(key):  # by its exact id or a unique prefix of it
    ids = sessions()
    found = [i for i in ids if i == key] or [i for i in ids if i.startswith(key)]
    if len(found) != 1: raise Fail('%d sessions match %r %s' % (len(found), key, ' '.join(found)))
    loaded = ids[found[0]].get('messages')
    if not (loaded and all(isinstance(m, dict) and 'role' in m for m in loaded)):
        raise Fail('session %s is unreadable; the conversation is unchanged' % found[0])
    return loaded


def summarize(cfg, messages, ask):  # refuses an empty summary: it must never replace anything
    summary = chat(cfg, messages + [{'role': 'user', 'content': ask}], [])[0]['content'].strip()
    if not summary: raise Fail('the model gave no summary; nothing was changed')
    return summary


# ---------------------------------------------------------------- REPL
HELP = ('usage: bantam.py [prompt.txt | -] ...   (no argument: the REPL; files make one prompt)\n'
        'REPL: /save /list /load <id or prefix> /compact /clear /help /quit; Ctrl+J adds a line')


def slash_command(cfg, messages, word, arg):  # a REPL command; an unknown one shows the help
    if word == '/save':
        sid = time.strftime('%Y%m%d-%H%M%S')
        save_session(messages, sid, summarize(cfg, messages, 'Summarize our talk in one line.'))
        say(cfg, 'saved session %s' % sid)
    elif word == '/list':
        say(cfg, '\n'.join('%s  %s  %3d messages  %s' % (sid, s.get('time'), len(s.get(
            'messages') or []), s.get('summary', '(unreadable)')) for sid, s in sessions().items())
            or 'no saved sessions')
    elif word == '/load':
        messages[:] = load_session(arg)
    elif word == '/compact':
        summary = summarize(cfg, messages, 'Summarize our work so far for yourself: the task, '
                            'what was done and learned, and what remains.')
        messages[1:] = [{'role': 'user', 'content': 'Summary of our work so far:\n' + summary}]
    elif word == '/clear':
        messages[:] = [{'role': 'system', 'content': cfg['system']}]
    else:
        say(cfg, HELP, out=sys.stdout)


def repl(cfg, messages):  # read and run prompts; autosave whenever the conversation changed
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl+C ends a turn, not Bantam
    with contextlib.suppress(ImportError, OSError):
        import readline  # lazy: only the REPL edits lines
        readline.parse_and_bind(r'"\C-j": "\C-v\C-j"')  # Ctrl+J inserts a newline
        readline.parse_and_bind('set enable-bracketed-paste on')  # a pasted block is one prompt
        readline.read_history_file(HISTORY)
    saved = json.dumps(messages)
    while sys.stdin is not None:  # a closed standard input is the end of input
        try:
            line = input('> ').strip()
            if line == '/quit': break
            if line.startswith('/'):
                slash_command(cfg, messages, *line.partition(' ')[::2])
            elif line:
                agent_loop(cfg, messages, line, list(TOOLS))
        except EOFError:
            break
        except KeyboardInterrupt:  # the turn (or the line being typed) ends
            say(cfg, '[interrupted]', 'error')
        except Exception as e:  # no traceback ever: one line, and the REPL goes on
            say(cfg, e if isinstance(e, Fail) else '%s: %s' % (type(e).__name__, e), 'error')
        # After every line, however it ended (even by a signal in the middle of a turn).
        finally:
            if json.dumps(messages) != saved: save_session(messages, 'autosave', '(autosave)')
            saved = json.dumps(messages)
    with contextlib.suppress(NameError, OSError):
        readline.write_history_file(HISTORY)


# ---------------------------------------------------------------- main
def stop(number, frame):  # SIGTERM, SIGHUP (and Ctrl+C in one-shot mode): unwind, then exit
    # A closed terminal, or stderr busy: exit all the same.
    with contextlib.suppress(Exception):
        print('\nbantam: stopped by %s' % signal.Signals(number).name, file=sys.stderr)
    sys.exit(128 + number)


def main(argv):
    for number in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        # The default SIGPIPE: `| head` ends Bantam quietly.
        signal.signal(number, signal.SIG_DFL if number == signal.SIGPIPE else stop)
    if argv[1:2] in (['-h'], ['--help']):
        print(HELP, 'Settings in model.cfg:', json.dumps(DEFAULTS, indent=2), sep='\n')
        return 0
    cfg = dict(DEFAULTS)  # until model.cfg is read
    try:
        cfg = load_config()
        messages = [{'role': 'system', 'content': cfg['system']}]
        if len(argv) < 2: return repl(cfg, messages) or 0
        prompt = '\n'.join(sys.stdin.read() if name == '-' else pathlib.Path(name).read_text(
            'utf-8') for name in argv[1:])  # several files make one prompt
        return agent_loop(cfg, messages, prompt, list(TOOLS)) or 0
    except Exception as e:  # no traceback ever: one line
        say(cfg, 'bantam: %s' % (e if isinstance(e, Fail) else '%s: %s' % (type(e).__name__, e)))
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))

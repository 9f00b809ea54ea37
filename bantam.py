#!/usr/bin/env python3
# Bantam: a tiny agent that gives an OpenAI-compatible model two tools, a shell and itself.
# The file reads in the order of the README's algorithm: configuration, chat client, tools,
# agentic loop, sessions, REPL, main.
import contextlib, copy, http.client, json, os, re, shutil, signal, subprocess, sys, tempfile
import pathlib, time, unicodedata, urllib.error, urllib.request

# ---------------------------------------------------------------- configuration
DEFAULTS = dict(endpoint='https://api.openai.com/v1', model='gpt-4o', temperature=0.7,
                api_key='', stream=True, color='auto', timeout=60, shell_timeout=120,
                max_al_iterations=1000, max_tool_res=32768, max_tokens=0, reasoning_effort='')
SYSTEM = 'You are a terminal agent: act with shell_exec, check results, then answer briefly.'
# Settings come from the user's places only, however Bantam starts: never from the current folder,
# which a cloned project writes. So home must be an absolute path (load_config), and a script read
# from standard input or given with -c is beside nothing: Python's sys.path[0] is the script's
# folder, links resolved, and "" without one.
HERE, USER = sys.path[0], os.path.expanduser('~/.bantam')
SESSIONS, HISTORY = os.path.join(USER, 'sessions'), os.path.expanduser('~/.bantam_history')
STYLES = dict(status='1;90', marker='36', think='2', call='33', result='32', body='2', error='31')


PARSE = {bool: {'true': True, 'false': False}.__getitem__, int: int, float: float, str: str}


class Fail(Exception): pass  # an error that ends a turn, or a tool call, with one line


def read_text(name, default='', folders=(USER, HERE)):
    # The first regular file of that name in these folders, as UTF-8: a BOM is allowed, and a
    # byte that is not UTF-8 becomes U+FFFD instead of an error.
    path = next(filter(os.path.isfile, [os.path.join(d, name) for d in folders if d]), None)
    return pathlib.Path(path).read_text('utf-8-sig', 'replace') if path else default


# Built-in defaults < model.cfg; a value is parsed as its default's type. A bad line is one line
# in Python's words: KeyError (an unknown key), ValueError (no "=", or a bad value), which never
# hold a line without "=" (a pasted key). The key: the variable's, when model.cfg has none or the
# same, taken out of the environment that commands inherit and without the white space a paste
# leaves in it (a line break in a header would print the key in urllib's error); a user's own
# other key stays there for their commands (hidden in output).
def load_config():
    if not os.path.isabs(USER):  # with HOME=., or none, ~ would be the current folder
        raise Fail('no home folder: HOME is not an absolute path')
    cfg = dict(DEFAULTS)
    # Each line that is not blank or a comment.
    for line in re.findall(r'(?m)^[ \t]*[^#\s].*', read_text('model.cfg')):
        key, value = map(str.strip, line.split('=', 1))
        cfg[key] = PARSE[type(DEFAULTS[key])](value)
    if os.getenv('NO_COLOR') or os.getenv('BANTAM_NO_COLOR'): cfg['color'] = 'never'
    if cfg['api_key'] in ('', os.getenv('OPENAI_API_KEY', '').strip()):
        cfg['api_key'] = ''.join(os.environ.pop('OPENAI_API_KEY', '').split())
    # Fields not sent: a streaming detail, those unset, those a server refuses (chat adds them).
    cfg['refused'] = ['index'] + [k for k in ('max_tokens', 'reasoning_effort') if not cfg[k]]
    # The project's own rules: the current folder's AGENTS.md, only as a plain file (a link may
    # point at .git/config and its token). Outside text, so cleaned like any.
    agents = clean(cfg, read_text('AGENTS.md', '', [] if os.path.islink('AGENTS.md') else ['.']))
    cfg['system'] = (read_text('system.txt', SYSTEM).strip() + '\n\n' + agents).strip()
    return cfg


def clean(cfg, text):  # outside text made inert: no hidden character, no API key
    # What acts on a terminal or hides text goes: the Unicode controls (Cc: C0 and C1, but tab
    # and newline) and format characters (Cf: direction marks and overrides, zero-width, tags).
    text = ''.join(c for c in text if c in '\t\n' or unicodedata.category(c) not in ('Cc', 'Cf'))
    # The key sent, and the user's own (which commands keep when model.cfg has another).
    for key in (cfg['api_key'], os.getenv('OPENAI_API_KEY', '').strip()):
        # A key under 24 characters is no secret (ollama's "ollama", say): left alone.
        if len(key) >= 24: text = text.replace(key, '[api key]')
    return text


def say(cfg, text, style='', out=sys.stderr, end='\n'):  # shown, so cleaned; words to stdout
    text = clean(cfg, str(text))
    if style in STYLES and (cfg['color'] == 'always' or (cfg['color'] == 'auto' and out.isatty())):
        text = '\033[%sm%s\033[0m' % (STYLES[style], text)
    print(text, end=end, file=out, flush=True)


def parse_json(text):  # a JSON object (as text, or as it came), or {} for anything else
    with contextlib.suppress(TypeError, ValueError):  # (an object is a TypeError: as it came)
        text = json.loads(text)
    return text if isinstance(text, dict) else {}


# ---------------------------------------------------------------- chat client
MARKERS = {'think': '--- reasoning start ---', 'text': '--- reasoning end ---'}
# The User-Agent: some gateways refuse unknown clients.
HEADERS = {'Content-Type': 'application/json', 'User-Agent': 'Mozilla/5.0 (compatible; Bantam/1.0)'}
RETRY = re.compile('408|409|425|429|5[0-9][0-9]|server_error')  # a status worth another try
FIELDS = ('model', 'stream', 'temperature', 'max_tokens', 'reasoning_effort')  # from cfg
# What every server needs, so never left out.
NEEDED = ('model', 'messages', 'stream', 'tools', 'role', 'content', 'tool_calls',
          'tool_call_id', 'id', 'type', 'function', 'name', 'arguments')
# What stands where output was left out (a flood, a full window).
LEFT_OUT = '\n\n[... left out: run the command again with head, tail or grep ...]\n\n'
# A full context window, whatever its words ("string too long" is not one; "Request too large",
# over a rate limit per minute, is).
FULL = re.compile('(?i)context.(length|size|window)|is too long|too large|maximum number of tokens')


# Send the conversation and return the reply, retrying on the Fibonacci schedule. A refusal
# Bantam can fix is fixed, and the request made anew and sent at once. The key goes in a header a
# redirect never takes to another host; the fields a server refused are left out at any depth
# (the JSON hook sees every object); a Retry-After of whole seconds is the next wait when it is a
# minute or less, and ends the turn when longer.
def chat(cfg, messages, tools):
    req = urllib.request.Request(cfg['endpoint'].rstrip('/') + '/chat/completions', None, HEADERS)
    if cfg['api_key']: req.add_unredirected_header('Authorization', 'Bearer ' + cfg['api_key'])
    delays = [1, 1, 2, 3, 5]  # the Fibonacci schedule; a fix uses none of it
    drop = lambda obj: {k: v for k, v in obj.items() if k not in cfg['refused']}  # noqa: E731
    while True:
        request = dict(messages=messages, **{k: cfg[k] for k in FIELDS})
        body = json.loads(json.dumps(request), object_hook=drop)
        if tools: body['tools'] = [SCHEMAS[name] for name in tools]
        try:  # the body made anew each time: a fix changes it
            with urllib.request.urlopen(req, json.dumps(body).encode(), cfg['timeout']) as response:
                return read_reply(cfg, response, not tools)  # a summary is owed
        except urllib.error.HTTPError as e:
            text = e.read().decode('utf-8', 'replace')
            why = explain('HTTP %d' % e.code, parse_json(text).get('error') or text[:500])
            if fix_refusal(cfg, messages, dict(body, tools=None), e.code, text, why): continue
            if not RETRY.fullmatch(str(e.code)) or 'insufficient_quota' in text: raise Fail(why)
            wait = e.headers.get('Retry-After', '')
            if wait.isdecimal() and int(wait) > 60: raise Fail(why + ' (Retry-After: %s s)' % wait)
            if wait.isdecimal() and delays: delays[0] = int(wait)
        except (OSError, http.client.HTTPException) as e:  # refused, timed out, cut off...
            why = 'network error at %s: %s' % (cfg['endpoint'], getattr(e, 'reason', e))
        if not delays: raise Fail('%s (gave up after 5 retries)' % why)
        say(cfg, '%s; retrying in %d s' % (why, delays[0]), 'error')
        time.sleep(delays.pop(0))


def fix_refusal(cfg, messages, body, code, text, why):
    # A field the request carries that the error names, right before a quote (escaped or not), a
    # backtick or a colon ('max_tokens', `temperature`, "loc": ["body", "reasoning"], Unknown name
    # \"x\", Invalid reasoning_effort: x), is left out from now on, child agents' and summaries'
    # requests included, whatever the words around it (a "missing" one too). A full window is
    # made room in. Each fix takes something away, so the loop ends.
    sent, names = json.dumps(body), re.findall(r'\b(\w+)\\?[\'"`:]', text)
    field = next((n for n in names if n not in NEEDED and '"%s": ' % n in sent), None)
    if code in (400, 422) and field:
        cfg['refused'].append(field)
        say(cfg, 'the server refused %s (%s): sending again without it' % (field, why), 'error')
        return True
    # A full window: of the tool outputs over 500 characters, the oldest is left out, a line
    # saying so in its place; the last one left is cut to its head and its tail (errors sit at
    # the end), a quarter of it each, so half as long each time. Nothing left: the turn ends.
    if code not in (400, 413, 429) or not FULL.search(text): return False
    outputs = [m for m in messages if m['role'] == 'tool' and len(m['content']) > 500]
    if not outputs: raise Fail(why + ' (the context window is full: /clear, or a bigger window)')
    content = outputs[0]['content']
    n = 0 if outputs[1:] else len(content) // 4
    outputs[0]['content'] = content[:n] + LEFT_OUT + content[len(content) - n:]
    say(cfg, 'the context window is full: sending again with less tool output', 'error')
    return True


# The status and the server's own message (else all it sent), on one line.
def explain(status, error):
    return ' '.join(('%s: %s' % (status, parse_json(error).get('message') or error)).split())


def events(response):
    # The JSON object of each "data:" line of a server-sent event stream, up to [DONE];
    # a plain JSON body is read as a one-line stream (JSON keeps no raw newline in a string).
    if 'json' in response.headers.get('Content-Type', ''):
        response = [b'data: ' + b' '.join(response.read().splitlines()), b'data: [DONE]']
    for line in response:
        field, _, value = line.decode('utf-8', 'replace').partition(':')
        if field == 'data' and value.strip() == '[DONE]':
            yield {'choices': [{'finish_reason': 'stop'}]}  # complete, even without one
            return
        if field == 'data': yield parse_json(value)


# Read a reply as it arrives and print its words live (when reasoning starts or ends, a marker on
# a line of its own); return the assistant message, with every field the server sent (thinking
# models want their reasoning and signatures back). An error the server would retry broke the
# reply, so it is tried again, as when the reply has no end, or no words where an answer is owed
# (a summary: a thinking model can spend max_tokens on reasoning; white space is no words). Any
# other error ends the turn.
def read_reply(cfg, response, owed):
    reply, text, finish, mode, newline = {'role': 'assistant'}, '', None, 'text', ''
    for chunk in events(response):
        if chunk.get('error'):
            broken = RETRY.fullmatch(str(parse_json(chunk['error']).get('code')))
            raise (ConnectionError if broken else Fail)(explain('server error', chunk['error']))
        choice = next((c for c in chunk.get('choices') or [] if not c.get('index')), {})
        finish = finish or choice.get('finish_reason')
        delta = choice.get('delta') or choice.get('message') or {}
        keep(reply, delta, ('role', 'content'))  # Bantam's own fields
        think = delta.get('reasoning_content') or delta.get('reasoning')
        for kind, piece in (('think', think), ('text', delta.get('content'))):
            if not piece or not isinstance(piece, str): continue
            if kind != mode: say(cfg, newline + MARKERS[kind], 'marker', sys.stdout)
            mode, newline = kind, '' if piece.endswith('\n') else '\n'
            if kind == 'text': text += piece  # (a local: joined in place, in linear time)
            say(cfg, piece, kind, sys.stdout, '')
    if mode == 'think': say(cfg, newline + MARKERS['text'], 'marker', sys.stdout)
    elif newline: say(cfg, '', out=sys.stdout)
    if finish == 'length': say(cfg, 'the reply was cut at max_tokens', 'error')
    if not finish or (owed and not text.strip()):
        raise ConnectionError('the reply was empty or ended early')
    return dict(reply, content=text)


# Text a server sends again whole: replaced, never joined.
NAMES = ('id', 'type', 'name', 'format')


def keep(into, part, own=()):
    # A streamed part added to what came before it (2.6), so that what goes back is what the
    # model wrote: text joined, names replaced, objects merged, a list's entries each continuing
    # the last one or added. Null adds nothing, nor does an empty value where one is kept (an
    # empty id never replaces Bantam's own); any other empty value is kept (DeepSeek wants its
    # "" reasoning back). The fields in own are left alone: a reply's role (always assistant,
    # whatever a server writes) and words are Bantam's.
    for key, value in part.items():
        if key in own or value in (None, [], {}) or (key in into and value == ''): continue
        if isinstance(value, dict): keep(into.setdefault(key, {}), value)
        elif isinstance(value, list): extend(into.setdefault(key, []), value, key)
        elif isinstance(value, str) and key not in NAMES: into[key] = into.pop(key, '') + value
        else: into[key] = value


# The entries of a streamed list: the first of a chunk may continue the last one; the others,
# like every entry of a plain reply's list, are new. A piece's id replaces nothing.
def extend(entries, parts, key):
    for i, part in enumerate(parts):
        last = entries[-1] if entries else {}
        # The same block streamed on: a call's piece that names no function, whatever its id (""
        # from DashScope, "null" at times from Mistral); or an entry of the same type and index
        # (or none) and no other id (an empty one is other than an id of Bantam's own), the last
        # not yet signed (a signature ends a block).
        piece = 'function' in part and not (part['function'] or {}).get('name')
        same = all(part.get(k) in (None, last.get(k, '')) for k in ('type', 'index', 'id'))
        fresh = i or not entries or last.get('signature') or not (piece or same)
        if fresh: entries.append(new_call() if key == 'tool_calls' else {})
        keep(entries[-1], part if fresh else dict(part, id=None))


def new_call(**function):  # with an id of our own, 9 letters and digits (Mistral's rule)
    return {'id': os.urandom(5).hex()[:9], 'type': 'function', 'function': function}


def call_in_text(reply, tools):
    # Small models on stock chat templates often write their call as text: bare JSON, fenced, in
    # <tool_call> or <tools> tags, or in doubled braces. A JSON object that ends the reply (only
    # its wrapping follows), names an offered tool and has arguments becomes a real call, written
    # into the reply and returned (else None), and the reply's text keeps only the words before
    # it; an object quoted inside an answer stays text. Models often leave a shell backslash
    # unescaped (\. or \;) inside the JSON: it is doubled, as meant.
    text = re.sub(r'(\\[\\"/bfnrtu])|(\\)', r'\1\2\2', reply['content'])
    for start in [m.start() for m in re.finditer('{', text)]:
        with contextlib.suppress(ValueError, RecursionError):
            obj, end = json.JSONDecoder(strict=False).raw_decode(text, start)
            # Only its wrapping may follow: white space, fences, a closing tag, stray braces.
            if not re.compile(r'(\s|```|</tool(_call|s)>|\})*').fullmatch(text, end): continue
            # A tool not offered, or no arguments (JSON text or an object): text after all.
            if obj.get('name') not in tools or not parse_json(obj.get('arguments')): return None
            # The words before it stay, without its wrapping: a doubled brace, a tag, a fence.
            words = text[:start].rstrip(' \t\r\n{')
            reply['content'] = re.sub(r'(```\w*\s*)?(<tool(_call|s)>)?$', '', words).rstrip()
            return reply.setdefault('tool_calls', [new_call(**obj)])


# ---------------------------------------------------------------- tools
def shell_exec(cfg, command):
    # Output goes to a file, not a pipe, so a background child cannot hold the call open. The
    # command is watched until it ends, its time is up or its output floods (256 MB); its
    # head and its tail are read back (errors sit at the end), half of max_tool_res each, less
    # 200 bytes for the exit line. Models write bash (sh where there is none).
    with tempfile.TemporaryFile() as out:
        end = time.monotonic() + cfg['shell_timeout']
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=out, executable=shutil.which('bash'), start_new_session=True)
        try:  # waited on 50 ms at a time (a short command at once): its time up, or a flood?
            while proc.returncode is None and time.monotonic() < end and out.seek(0, 2) < 2 ** 28:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(0.05)
        finally:  # on a timeout, a flood, Ctrl+C or a signal, the whole group is killed
            code = proc.poll()
            if code is None: os.killpg(proc.pid, signal.SIGKILL)
        size, n = out.seek(0, 2), cfg['max_tool_res'] // 2 - 100
        head, tail = os.pread(out.fileno(), n, 0), os.pread(out.fileno(), n, max(n, size - n))
    if size > 2 * n: head += LEFT_OUT.encode()
    if code is None: code = 'killed: past shell_timeout, or over 256 MB of output'
    return clean(cfg, str(head + tail, 'utf-8', 'replace') or '(no output)') + '\n\nexit: %s' % code


def run_subagent(cfg, prompt):  # a fresh child conversation through the same loop
    child = [{'role': 'system', 'content': cfg['system'] + '\n\nImportant: this is a child agent'}]
    # No run_subagent: a child cannot fork forever. A child that stopped says why.
    return clean(cfg, agent_loop(cfg, child, prompt, ['shell_exec'])) or '(no answer)'


# Small models heed a tool's description more than the system prompt: it carries the key habit.
TOOLS = {'shell_exec': ('command', shell_exec, 'Run a bash command; returns output and exit code. '
                        'To save a result, the same command writes it: cmd > file; cat file.'),
         'run_subagent': ('prompt', run_subagent, 'Only for a big multi-step task: a child agent.')}


SCHEMAS = {name: {'type': 'function', 'function': {'name': name, 'description': about,
           'parameters': {'type': 'object', 'properties': {param: {'type': 'string'}},
                          'required': [param]}}} for name, (param, _, about) in TOOLS.items()}
# A call that makes again the round of calls just made, of any length (ls; ls, or ls, pwd; ls, pwd)
# is not run: it would say the same, or do it twice. A call made again after other work runs.
REPEATED = 'the same call as your last one, not run again: answer from its result, or change it'


def run_tool(cfg, call, tools, made):  # check a call, trace it, run it; return the result
    name, raw = call['function'].get('name', ''), call['function'].get('arguments') or '{}'
    args = parse_json(raw)  # decoded, or an object as some servers send it
    # The trace shows what runs, on one line: the arguments decoded, then written as JSON with
    # escapes only for line breaks, controls and non-ASCII (no look-alike letter hides in it).
    say(cfg, '[tool call: %s(%s)]' % (name, json.dumps(args) if args else raw), 'call')
    # Sent back as JSON text, {} when it is not an object: servers parse it again.
    call['function']['arguments'] = raw if args and isinstance(raw, str) else json.dumps(args)
    made.append((name, args or raw))  # the turn's calls, as decoded
    again = any(made[-k:] == made[-2 * k:-k] for k in range(1, len(made) // 2 + 1))
    param, tool, _ = TOOLS[name] if name in tools else ('', None, '')
    why = 'no %s argument as a JSON string' % param if tool else 'there is no tool %r' % name
    ok = tool and isinstance(args.get(param), str) and not again
    result = tool(cfg, args[param]) if ok else 'error: ' + (REPEATED if again else why)
    say(cfg, '[tool result: %s]' % name, 'result')
    say(cfg, result, 'body' if ok else 'error')
    return result


# ---------------------------------------------------------------- agentic loop
PENDING = 'error: this call did not finish (interrupted)'  # a call's result until it has one


def with_prompt(messages, prompt):
    # The conversation and a prompt, in a shape every server takes: a user message follows only
    # the system prompt or an answer. After a turn that stopped before its answer (its last
    # message a tool's: Mistral refuses a user message there) or after /compact (a user message:
    # strict templates refuse two in a row), an assistant message stands between.
    if messages[-1]['role'] in ('user', 'tool'):
        messages = messages + [{'role': 'assistant', 'content': '(no answer)'}]
    return messages + [{'role': 'user', 'content': prompt}]


# One turn: add the prompt, then ask the model and run the tools it calls, until it calls none;
# return its answer. An empty reply right after tool results is asked once more, in words that
# stay; any other is no answer (""). A model that repeats a round of calls is told (run_tool). At
# the limit a line says so, and is the turn's result (a child that stopped says why). Without an
# answer the conversation ends in a tool's result or a prompt.
def agent_loop(cfg, messages, prompt, tools):
    messages[:] = with_prompt(messages, prompt)
    made, why = [], 'stopped after max_al_iterations=%d requests' % cfg['max_al_iterations']
    for _ in range(cfg['max_al_iterations']):
        say(cfg, '...requesting...', 'status')
        reply = chat(cfg, messages, tools)
        calls = reply.get('tool_calls') or call_in_text(reply, tools)
        # Never an empty message (white space is none). Small models answer a tool's result with
        # nothing when they think the work done: asked once more.
        if reply['content'].strip() or calls: messages.append(reply)
        elif messages[-1]['role'] == 'tool':
            messages[:] = with_prompt(messages, 'Empty reply: go on, or answer from results.')
            continue
        if not calls: return reply['content'].strip()
        # Answered in advance: an interruption leaves a valid conversation.
        messages += [dict(role='tool', tool_call_id=c['id'], content=PENDING) for c in calls]
        for call, m in zip(calls, messages[-len(calls):]):
            m['content'] = run_tool(cfg, call, tools, made)
    say(cfg, why, 'error')  # stopped before an answer: why is the turn's result
    return why


# ---------------------------------------------------------------- sessions
# Saved under its id (a new one for None), and under the names given: the autosave, unless the
# save was asked for (then it says its id). Returns the id, or None when the disk refuses: one
# line says why, and the conversation stays in memory.
def save_session(cfg, messages, sid, names=('autosave',)):
    # Each file atomically: a private file, written in a new private folder of the sessions
    # folder, then renamed over the old one. The folder's name, no other file's (the time,
    # readable, and random letters), is a new conversation's id; it goes when the save ends, with
    # what a failed save wrote. Its summary, needing no model, is its first prompt's first line.
    top = next((m['content'] for m in messages if m['role'] == 'user'), '').split('\n')[0]
    # The key is hidden as on screen: a reply may echo it.
    text = clean(cfg, json.dumps(dict(time=time.strftime('%F %T'), summary=top, messages=messages)))
    try:
        os.makedirs(SESSIONS, 0o700, exist_ok=True)
        with tempfile.TemporaryDirectory('', time.strftime('%Y%m%d-%H%M%S-'), SESSIONS) as new:
            for name in names + (sid,):
                with tempfile.NamedTemporaryFile('w', dir=new, delete=False) as f:
                    f.write(text)
                sid = name or os.path.basename(new)
                os.replace(f.name, os.path.join(SESSIONS, sid + '.json'))
    except OSError as e:  # a full disk, a read-only home
        return say(cfg, 'not saved: %s' % e, 'error')
    if not names: say(cfg, 'saved session %s' % sid)
    return sid


def sessions():  # {id: its saved data}, newest first
    paths = sorted(pathlib.Path(SESSIONS).glob('*.json'), key=os.path.getmtime, reverse=True)
    return {path.stem: parse_json(path.read_bytes()) for path in paths if path.is_file()}


# ---------------------------------------------------------------- REPL


def run_line(cfg, messages, line):  # a REPL command when its first word is one; else a prompt
    word, _, arg = line.partition(' ')
    if word == '/save':  # no model call: /save works while the server is down
        save_session(cfg, messages, None, ())
    elif word == '/list':
        say(cfg, '\n'.join('%s  %s  %3d messages  %s' % (sid, s.get('time'),
            len(s.get('messages') or []), s.get('summary', '(unreadable)'))
            for sid, s in sessions().items()) or 'no saved sessions')
    elif word == '/load':  # by id or prefix, under this folder's rules (not the saved ones)
        ids = sessions()
        hits = [i for i in ids if i == arg] or [i for i in ids if i.startswith(arg)]
        if len(hits) != 1: raise Fail('%d sessions match %r %s' % (len(hits), arg, ' '.join(hits)))
        messages[1:] = ids[hits[0]].get('messages')[1:]
    elif word == '/compact':
        ask = 'Summarize our work so far for yourself: the task, what was done, what remains.'
        text = chat(cfg, with_prompt(copy.deepcopy(messages), ask), [])['content'].strip()
        messages[1:] = [{'role': 'user', 'content': 'Summary of our work so far:\n' + text}]
    elif word == '/clear':
        messages[:] = [{'role': 'system', 'content': cfg['system']}]
    elif word == '/help':
        say(cfg, '/save /list /load <id|prefix> /compact /clear /help /quit', out=sys.stdout)
    elif line:
        agent_loop(cfg, messages, line, list(TOOLS))


# Read and run prompts; autosave whenever the conversation changed. It keeps its id (once
# saved), a copy of what was saved, and the line read last. Ctrl+C ends the turn, or drops the
# line being typed. After every line, however it ended (even by a signal in the middle of a
# turn), a prompt that got no reply at all is taken back; a conversation changed other than by
# growing (/clear, /compact, an output left out, most /loads) is a new one: the old file keeps
# the old one. An error is one line, and the REPL goes on; so does a save the disk refuses: the
# last copy saved is kept, so the save is tried again after every line until one lands.
def repl(cfg, messages):
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl+C ends a turn, not Bantam
    with contextlib.suppress(ImportError, OSError):
        import readline  # lazy: only the REPL edits lines
        readline.parse_and_bind(r'"\C-j": "\C-v\C-j"')  # Ctrl+J inserts a newline
        readline.parse_and_bind('set enable-bracketed-paste on')  # a paste is one prompt
        readline.read_history_file(HISTORY)
    sid, kept, line = None, copy.deepcopy(messages), ''
    while None not in (sys.stdin, sys.stdout):  # a closed input or output ends the REPL
        try:
            line = input('> ').strip()
            if line == '/quit': break
            run_line(cfg, messages, line)
        except EOFError: break
        except KeyboardInterrupt: say(cfg, '[interrupted]', 'error')
        except Exception as e:  # no traceback ever: one line, and the REPL goes on
            say(cfg, e if isinstance(e, Fail) else '%s: %s' % (type(e).__name__, e), 'error')
        finally:
            if line and messages[-1] == {'role': 'user', 'content': line}:  # no reply at all
                del messages[-1]
                say(cfg, '[no answer: the prompt is taken back; Up brings it back]', 'error')
            if messages[:len(kept)] != kept: sid = None
            saved = messages != kept and save_session(cfg, messages, sid)
            if saved: sid, kept = saved, copy.deepcopy(messages)
    with contextlib.suppress(NameError, OSError): readline.write_history_file(HISTORY)


# ---------------------------------------------------------------- main
def stop(number, frame):  # a stopping signal (Ctrl+C too in one-shot mode): unwind, exit
    print('\nbantam: stopped by %s' % signal.Signals(number).name, file=sys.stderr)
    sys.exit(128 + number)


def main(argv):
    for number in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        # The default SIGPIPE: `| head` ends Bantam quietly.
        signal.signal(number, signal.SIG_DFL if number == signal.SIGPIPE else stop)
    cfg = dict(DEFAULTS)  # until model.cfg is read
    try:
        cfg = load_config()
        messages = [{'role': 'system', 'content': cfg['system']}]
        if len(argv) < 2: return repl(cfg, messages) or 0
        # The prompt from a file (/dev/stdin for a pipe); the run kept under an id of its own.
        agent_loop(cfg, messages, pathlib.Path(argv[1]).read_text('utf-8'), list(TOOLS))
        save_session(cfg, messages, None, ())
        return 0 if messages[-1]['role'] == 'assistant' else 2  # 2: no answer
    except Exception as e:  # no traceback ever: one line
        say(cfg, 'bantam: %s' % (e if isinstance(e, Fail) else '%s: %s' % (type(e).__name__, e)))
        return 1


if __name__ == '__main__': sys.exit(main(sys.argv))

# Python 2.7 code (mainline 4.0.4 runs on Python 2): pyupgrade rules do not apply.
# ruff: noqa: UP004, UP024, UP031
"""Run mainline BitTorrent 4.0.4's headless client with an event log (Python 2).

This is a launcher of ours for `bench/mainline_swarm.py`; it contains no
mainline code. It puts a mainline 4.0.4 source tree on `sys.path`, wraps a
few of its methods at run time (monkeypatching: the wrapped method is called
unchanged, the wrapper only records), and then runs mainline's own
`btdownloadheadless.py` as `__main__`. Every event is one JSON line with the
wall-clock time `t` (time.time(), the same clock in every namespace of the
host) in the file given by `--events`:

  start          the probe is up (pid, label, the client's arguments)
  announce       a tracker announce leaves (`Rerequester._announce`):
                 event started / completed / stopped / null
  announce_reply its reply (or error) is handled (`_postrequest`)
  conn_up/down   a connection completes its handshake / closes (remote ip)
  unchoke_sent   `Upload.unchoke` unchokes a choked peer (the choker's
                 decision, as torrentlab's `chokes` log); `choke_sent` the
                 reverse
  unchoked_by    `SingleDownload.got_unchoke` while choked (the receiver's
                 view of the same); `choked_by` `got_choke` while unchoked,
                 with the number of our requests it drops
  up             a piece message starts (piece, begin, to): block uploads
  piece          a piece became complete and hash-checked here
                 (`SingleDownload.got_piece` turned `do_I_have` true)
  waste          a block that `got_piece` discarded or that was a duplicate,
                 classified as torrentlab does: `end_game` when the client is
                 in end game; outside it `dropped` when it was not (or no
                 longer) asked of that peer, else `duplicate` (asked of it,
                 but already here from another peer)
  finished       `_SingleTorrent._finished` (the last piece, or the seed's
                 initial check)
  totals         every 5 s and at exit: block bytes uploaded (the payload of
                 every piece message started, `Upload.get_upload_chunk`) and
                 downloaded (needed blocks), wasted bytes by kind, mainline's
                 own counters (`upmeasure`/`downmeasure` totals,
                 `Downloader.discarded_bytes`) and the process's CPU seconds

`--variant V[,V...]` runs an experiment, not mainline as released: one of
torrentlab's simplifications put into mainline, to test what it does.
`started-for-seeds`: the piece picker's strict priority ignores mainline's
`seedstarted` list, as torrentlab's picker does (PiecePicker.next called
with seed=False). `started-requested`: a piece counts as started only while
some of its blocks are requested or received (torrentlab's `started`);
mainline keeps it started from its first request until it completes.

It also sets the congestion controller of every TCP socket mainline opens
(`--cc`, default cubic: TCP_CONGESTION, Linux) because the host's default
may be another one, and mainline never sets it.

Usage (normally started by mainline_swarm.py inside a network namespace):

  python2.7 bench/mainline_probe.py --src /path/to/mainline-4.0.4 \\
      --events peer.jsonl --label l03 [--cc cubic] [--variant NAME] -- \\
      --max_upload_rate 20 --save_as /path/file --data_dir /path/data x.torrent

Everything after `--` is passed to btdownloadheadless.py. SIGTERM or SIGINT
writes the final `totals` line and exits at once (no `stopped` announce).
Needs: Python 2.7 and the mainline source tree; nothing else.
"""

import json
import os
import resource
import signal
import socket
import sys
import threading
import time

TCP_CONGESTION = 13  # linux/tcp.h; Python 2.7's socket module lacks it


def parse_args(argv):
    opts = {'src': None, 'events': None, 'label': 'peer', 'cc': 'cubic',
            'variant': ''}
    if '--' not in argv:
        raise SystemExit('usage: mainline_probe.py --src DIR --events FILE '
                         '[--label L] [--cc NAME] [--variant V] -- '
                         'BTDOWNLOADHEADLESS-ARGS')
    i = argv.index('--')
    own, rest = argv[:i], argv[i + 1:]
    j = 0
    while j < len(own):
        k = own[j]
        if k in ('--src', '--events', '--label', '--cc', '--variant') and \
                j + 1 < len(own):
            opts[k[2:]] = own[j + 1]
            j += 2
        else:
            raise SystemExit('mainline_probe.py: unknown argument %r' % k)
    if not opts['src'] or not opts['events']:
        raise SystemExit('mainline_probe.py: --src and --events are required')
    return opts, rest


class Log(object):
    """JSON lines, flushed at every line (the harness reads them live)."""

    def __init__(self, path):
        self.f = open(path, 'a', 1)
        self.lock = threading.Lock()

    def __call__(self, ev, **kw):
        kw['ev'] = ev
        kw['t'] = time.time()
        line = json.dumps(kw)
        self.lock.acquire()
        try:
            self.f.write(line + '\n')
            self.f.flush()
        finally:
            self.lock.release()


def install(opts, log):
    src = os.path.abspath(opts['src'])
    sys.path.insert(0, src)

    # Every TCP socket mainline (and urllib2, for the tracker) opens gets the
    # congestion controller asked for.
    cc = opts['cc']
    base = socket.socket

    class CCSocket(base):
        def __init__(self, family=socket.AF_INET, type=socket.SOCK_STREAM,
                     proto=0, _sock=None):
            base.__init__(self, family, type, proto, _sock)
            if _sock is None and type == socket.SOCK_STREAM and cc:
                try:
                    self.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc)
                except socket.error as e:
                    log('warning', what='TCP_CONGESTION %s: %s' % (cc, e))
    socket.socket = CCSocket
    socket.SocketType = CCSocket

    from BitTorrent import Connecter, Downloader, Encoder, Rerequester, Uploader, download

    st = {
        'up_block': 0, 'down_block': 0,
        'wasted_dropped': 0, 'wasted_duplicate': 0, 'wasted_end_game': 0,
        'torrent': None, 'downloader': None, 'received': {},
        'cc_checked': False,
    }

    # --- uploads: block bytes of every piece message started, per remote
    orig_chunk = Uploader.Upload.get_upload_chunk

    def get_upload_chunk(self):
        r = orig_chunk(self)
        if r is not None:
            st['up_block'] += len(r[2])
            log('up', piece=r[0], begin=r[1], to=self.connection.ip)
        return r
    Uploader.Upload.get_upload_chunk = get_upload_chunk

    # --- choker decisions
    orig_unchoke = Uploader.Upload.unchoke

    def unchoke(self, t):
        if self.choked:
            log('unchoke_sent', to=self.connection.ip)
        return orig_unchoke(self, t)
    Uploader.Upload.unchoke = unchoke

    orig_choke = Uploader.Upload.choke

    def choke(self):
        if not self.choked:
            log('choke_sent', to=self.connection.ip)
        return orig_choke(self)
    Uploader.Upload.choke = choke

    # --- downloads
    orig_got_unchoke = Downloader.SingleDownload.got_unchoke

    def got_unchoke(self):
        if self.choked:
            log('unchoked_by', frm=self.connection.ip)
        return orig_got_unchoke(self)
    Downloader.SingleDownload.got_unchoke = got_unchoke

    orig_got_choke = Downloader.SingleDownload.got_choke

    def got_choke(self):
        if not self.choked:
            log('choked_by', frm=self.connection.ip,
                dropped=len(self.active_requests),
                endgame=bool(self.downloader.storage.endgame))
        return orig_got_choke(self)
    Downloader.SingleDownload.got_choke = got_choke

    orig_dl_init = Downloader.Downloader.__init__

    def dl_init(self, *a, **kw):
        orig_dl_init(self, *a, **kw)
        st['downloader'] = self
    Downloader.Downloader.__init__ = dl_init

    orig_got_piece = Downloader.SingleDownload.got_piece

    def got_piece(self, index, begin, piece):
        # torrentlab's order (crates/bittorrent/src/client/download.rs,
        # got_piece): a block not asked of this peer any more is
        # `dropped` (`end_game` in end game); one asked of it that had
        # already come from another peer is a `duplicate` (`end_game` in
        # end game).
        storage = self.downloader.storage
        key = (index, begin, len(piece))
        endgame = storage.endgame
        had = storage.do_I_have(index)
        blk = (index, begin)
        in_active = key in self.active_requests
        before = blk in st['received'] or had
        kind = None
        if not in_active or before:
            if endgame:
                kind = 'end_game'
            elif not in_active:
                kind = 'dropped'
            else:
                kind = 'duplicate'
        r = orig_got_piece(self, index, begin, piece)
        if kind is not None:
            st['wasted_' + kind] += len(piece)
            log('waste', kind=kind, bytes=len(piece), frm=self.connection.ip,
                piece=index, begin=begin, in_active=in_active,
                already=before, first_from=st['received'].get(blk))
        else:
            st['down_block'] += len(piece)
            st['received'][blk] = self.connection.ip
        if not had and storage.do_I_have(index):
            log('piece', piece=index)
        return r
    Downloader.SingleDownload.got_piece = got_piece

    # --- connections
    orig_completed = Encoder.Encoder.connection_completed

    def connection_completed(self, c):
        log('conn_up', ip=c.ip, local=bool(c.locally_initiated))
        if not st['cc_checked']:
            st['cc_checked'] = True
            try:
                s = c.connection.socket
                got = s.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16)
                log('tcp_cc', cc=got.rstrip('\0'))
            except Exception as e:
                log('warning', what='getsockopt TCP_CONGESTION: %s' % e)
        return orig_completed(self, c)
    Encoder.Encoder.connection_completed = connection_completed

    orig_sever = Connecter.Connection._sever

    def _sever(self):
        if self.complete:
            log('conn_down', ip=self.ip)
        return orig_sever(self)
    Connecter.Connection._sever = _sever

    # --- announces, completion
    orig_announce = Rerequester.Rerequester._announce

    def _announce(self, event=None):
        names = ['started', 'completed', 'stopped']
        log('announce', event=None if event is None else names[event])
        return orig_announce(self, event)
    Rerequester.Rerequester._announce = _announce

    orig_post = Rerequester.Rerequester._postrequest

    def _postrequest(self, data=None, errormsg=None, peerid=None):
        log('announce_reply', error=errormsg, bytes=len(data or ''))
        return orig_post(self, data, errormsg, peerid)
    Rerequester.Rerequester._postrequest = _postrequest

    orig_finished = download._SingleTorrent._finished

    def _finished(self):
        log('finished')
        st['torrent'] = self
        return orig_finished(self)
    download._SingleTorrent._finished = _finished

    orig_start = download._SingleTorrent.start_download

    def start_download(self, *a, **kw):
        st['torrent'] = self
        return orig_start(self, *a, **kw)
    download._SingleTorrent.start_download = start_download

    # --- experiments: mainline with torrentlab's simplifications put in
    variants = [v for v in opts['variant'].split(',') if v]
    known = ('started-for-seeds', 'started-requested')
    for v in variants:
        if v not in known:
            raise SystemExit('mainline_probe.py: unknown --variant %r' % v)
    from BitTorrent import PiecePicker
    if 'started-for-seeds' in variants:
        # torrentlab's picker has no `seedstarted` list: the strict priority
        # of pieces already started counts every started piece, also when
        # the remote is a seed. Mainline passes seed=True for a remote with
        # every piece and then looks only at pieces started from seeds.
        orig_next = PiecePicker.PiecePicker.next

        def next_(self, havefunc, seed=False):
            return orig_next(self, havefunc, False)
        PiecePicker.PiecePicker.next = next_
    if 'started-requested' in variants:
        # torrentlab's picker counts a piece as started only while some of
        # its blocks are requested or received; mainline keeps a piece in
        # `started` from its first request until it completes, also once a
        # choke has sent every request of it back.
        orig_next2 = PiecePicker.PiecePicker.next

        def touched(sw, i):
            r = sw.inactive_requests[i]
            if r == 1 or r is None:   # never requested, or complete
                return False
            size = sw.config['download_slice_size']
            total = (sw._piecelen(i) + size - 1) // size
            return len(r) < total

        def next2(self, havefunc, seed=False):
            dl = st['downloader']
            if dl is None:
                return orig_next2(self, havefunc, seed)
            saved = (self.started, self.seedstarted)
            self.started = [i for i in saved[0] if touched(dl.storage, i)]
            self.seedstarted = [i for i in saved[1]
                                if touched(dl.storage, i)]
            try:
                return orig_next2(self, havefunc, seed)
            finally:
                self.started, self.seedstarted = saved
        PiecePicker.PiecePicker.next = next2
    if variants:
        log('variant', name=opts['variant'])
    return st


def totals(st):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    d = {
        'up_block': st['up_block'], 'down_block': st['down_block'],
        'wasted_dropped': st['wasted_dropped'],
        'wasted_duplicate': st['wasted_duplicate'],
        'wasted_end_game': st['wasted_end_game'],
        'cpu_s': ru.ru_utime + ru.ru_stime,
    }
    t = st['torrent']
    if t is not None and getattr(t, '_upmeasure', None) is not None:
        d['mainline_up_total'] = t._upmeasure.get_total()
        d['mainline_down_total'] = t._downmeasure.get_total()
    if st['downloader'] is not None:
        d['mainline_discarded'] = st['downloader'].discarded_bytes
    return d


def main():
    opts, rest = parse_args(sys.argv[1:])
    log = Log(opts['events'])
    st = install(opts, log)
    log('start', label=opts['label'], pid=os.getpid(), argv=rest)

    def final(signum, frame):
        try:
            log('totals', final=True, **totals(st))
        finally:
            os._exit(0)
    signal.signal(signal.SIGTERM, final)
    signal.signal(signal.SIGINT, final)

    def ticker():
        while True:
            time.sleep(5)
            try:
                log('totals', final=False, **totals(st))
            except Exception as e:
                log('warning', what='totals: %s' % e)
    th = threading.Thread(target=ticker)
    th.setDaemon(True)
    th.start()

    import runpy
    script = os.path.join(os.path.abspath(opts['src']), 'btdownloadheadless.py')
    sys.argv = [script] + rest
    try:
        runpy.run_path(script, run_name='__main__')
    finally:
        log('totals', final=True, **totals(st))
        log('exit')


if __name__ == '__main__':
    main()

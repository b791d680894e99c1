import SkyNetRuntime
extension DashboardPage {
    /// The page's script: logs in when the dashboard asks for it, then takes every `state`
    /// frame of `/events`. It paints at most four times a second, touches only what changed,
    /// and never runs a loop of its own, so a page left open costs the machine running the
    /// scan little.
    static let script = #"""
        'use strict';
        (function () {
          const $ = (id) => document.getElementById(id);
          const WINDOW_MS = 60000, MIN_WINDOW_MS = 10000, MAX_BARS = 20000;
          // The task stream starts at the scan's start and fills rightwards (at least 10 s
          // wide); past a minute it scrolls, showing the last minute.
          const windowOf = (state) => {
            const now = state.elapsed * 1000, left = Math.max(0, now - WINDOW_MS);
            return { left, duration: Math.max(MIN_WINDOW_MS, now - left) };
          };
          const colours = {};
          for (const name of ['done', 'failed', 'rerun', 'cancelled', 'running']) {
            colours[name] = getComputedStyle(document.documentElement).getPropertyValue('--' + name).trim();
          }
          let source = null, ended = false, bars = [], latest = null;

          // Writes only what changed: an unchanged page is not laid out or painted again, which
          // is most of what a browser would spend on a scan it shows ten times a second.
          function put(element, text) {
            const value = String(text);
            if (element.textContent !== value) element.textContent = value;
          }
          function set(element, property, value) {
            if (element[property] !== value) element[property] = value;
          }
          function setWidth(element, percent) {
            const value = percent.toFixed(1) + '%';
            if (element.style.width !== value) element.style.width = value;
          }

          function clock(seconds) {
            if (seconds === null || seconds === undefined || !isFinite(seconds)) return '--:--';
            const s = Math.max(0, Math.round(seconds)), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
            const ss = String(s % 60).padStart(2, '0');
            return h > 0 ? h + ':' + String(m).padStart(2, '0') + ':' + ss : m + ':' + ss;
          }

          function start() {
            fetch('/state', { cache: 'no-store' }).then((response) => {
              if (response.status === 401) { showLogin(); return null; }
              if (!response.ok) throw new Error('HTTP ' + response.status);
              return response.json();
            }).then((state) => {
              if (!state) return;
              render(state);
              if (state.scan !== 'finished') listen();
            }).catch((error) => { $('connection').textContent = 'cannot reach the coordinator (' + error.message + ')'; });
          }

          function listen() {
            source = new EventSource('/events');
            source.addEventListener('state', (event) => {
              $('connection').textContent = '';
              render(JSON.parse(event.data));
            });
            source.onerror = () => {
              if (ended) { source.close(); return; }
              $('connection').textContent = 'connection lost: retrying (the scan may have ended)';
            };
          }

          function showLogin() {
            $('login').hidden = false;
            $('scan-state').textContent = 'log in';
            $('token').focus();
          }

          $('login-form').addEventListener('submit', async (event) => {
            event.preventDefault();
            const token = $('token').value;
            $('token').value = '';
            $('login-message').textContent = '';
            try {
              const challenge = await fetch('/login/challenge', { cache: 'no-store' });
              if (!challenge.ok) {
                const body = await challenge.json().catch(() => ({}));
                throw new Error(body.error || 'challenge: HTTP ' + challenge.status);
              }
              const nonce = (await challenge.json()).nonce;
              const proof = skynetDashboardProof(token, nonce);
              const answer = await fetch('/login?nonce=' + nonce + '&proof=' + proof, { cache: 'no-store' });
              if (!answer.ok) {
                const body = await answer.json().catch(() => ({}));
                throw new Error(body.error || 'HTTP ' + answer.status);
              }
              $('login').hidden = true;
              start();
            } catch (error) {
              $('login-message').textContent = error.message;
            }
          });

          // Every frame's bars are kept, but the page is painted at most four times a second
          // (the newest frame wins): painting is what costs a browser, and so the machine
          // running the scan when the browser is on it; the end is painted at once.
          const PAINT_MS = 250;
          let lastPaint = 0, paintQueued = false;
          function render(state) {
            addBars(state);
            latest = state;
            if (state.scan === 'finished') { paint(); return; }
            if (paintQueued) return;
            paintQueued = true;
            setTimeout(paint, Math.max(0, lastPaint + PAINT_MS - performance.now()));
          }

          function paint() {
            paintQueued = false;
            lastPaint = performance.now();
            const state = latest;
            const finished = state.scan === 'finished';
            const done = state.completed, total = state.total;
            put($('completed'), done);
            put($('total'), total);
            put($('failed'), state.failed);
            put($('rate'), state.rate === null ? '–' : state.rate.toFixed(state.rate < 10 ? 2 : 0));
            put($('eta'), finished ? '0:00' : clock(state.eta_seconds));
            put($('elapsed'), clock(state.elapsed));
            setWidth($('progress-bar'), total > 0 ? 100 * done / total : 100);
            const pill = $('scan-state');
            put(pill, finished ? state.finished.how : 'running');
            set(pill, 'className', 'pill ' + (finished ? state.finished.how : 'running'));
            set(document, 'title', (finished ? state.finished.how : Math.floor(total > 0 ? 100 * done / total : 100) + '%') + ' · SkyNet scan');
            if (finished) {
              ended = true;
              $('final').hidden = false;
              $('final').textContent = state.finished.message + ' in ' + state.seconds.toFixed(2) + ' s.';
              if (source) source.close();
            }
            renderSystems(state.cluster);
            drawStream(state);
            drawThroughput(state);
            renderFailures(state.failures);
          }

          function renderSystems(systems) {
            const body = $('systems').tBodies[0];
            for (const system of systems) {
              let row = body.querySelector('tr[data-system="' + CSS.escape(system.name) + '"]');
              if (!row) {
                row = document.createElement('tr');
                row.dataset.system = system.name;
                row.innerHTML = '<td class="name"></td><td class="address muted"></td><td><span class="state"></span></td>' +
                  '<td><span class="slots"><div></div></span><span class="load"></span></td>' +
                  '<td class="num completed"></td><td class="num failed"></td><td class="num mean"></td>';
                body.appendChild(row);
              }
              const cell = (name) => row.querySelector('.' + name);
              put(cell('name'), system.name);
              put(cell('address'), system.link === 'encrypted' ? system.address + ' (encrypted)' : system.address);
              put(cell('state'), system.state);
              set(cell('state'), 'className', 'state state-' + system.state.replace(/ /g, '-'));
              set(cell('state'), 'title', system.detail);
              setWidth(cell('slots').firstChild, system.capacity > 0 ? 100 * Math.min(1, system.running / system.capacity) : 0);
              put(cell('load'), system.running + ' / ' + system.capacity);
              put(cell('completed'), system.completed);
              put(cell('failed'), system.failed);
              put(cell('mean'), system.mean_seconds.toFixed(3));
            }
          }

          // Bars by row (system and lane): the last one, to extend with the next run of tiny
          // attempts (the server merges them within a frame; this merges across frames).
          let lastOnRow = new Map();
          const TINY_MS = 50;
          const tiny = (bar) => bar.end - bar.start < TINY_MS;

          function addBars(state) {
            if (!state.spans) return;
            // /state's recent bars and the first frame's may overlap: a bar is kept once.
            const newest = bars.length > 0 ? bars[bars.length - 1].end : -1;
            for (const span of state.spans) {
              if (span.end <= newest && seen(span)) continue;
              const row = span.system + '#' + span.lane, last = lastOnRow.get(row);
              if (last && last.outcome === span.outcome && (tiny(span) || span.count > 1) &&
                  (tiny(last) || last.count > 1) && span.start - last.end < TINY_MS) {
                last.end = Math.max(last.end, span.end);
                last.count += span.count;
                continue;
              }
              bars.push(span);
              lastOnRow.set(row, span);
            }
            const oldest = state.elapsed * 1000 - WINDOW_MS;
            let first = 0;
            while (first < bars.length && (bars[first].end < oldest || bars.length - first > MAX_BARS)) first++;
            if (first > 0) bars = bars.slice(first);
          }

          function seen(span) {
            for (let index = bars.length - 1; index >= 0 && bars[index].end >= span.start; index--) {
              if (bars[index].system === span.system && bars[index].lane === span.lane &&
                  bars[index].start <= span.start && bars[index].end >= span.end) return true;
            }
            return false;
          }

          function lanesOf(cluster) {
            const rows = new Map();
            let next = 0;
            const labels = [];
            for (const system of cluster) {
              const count = Math.max(1, system.lanes);
              rows.set(system.name, next);
              labels.push([system.name, next, count]);
              next += count;
            }
            return { rows, labels, count: Math.max(1, next) };
          }

          function sized(canvas, height) {
            const ratio = window.devicePixelRatio || 1;
            const width = Math.max(100, canvas.clientWidth);
            if (canvas.style.height !== height + 'px') canvas.style.height = height + 'px';
            if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
              canvas.width = Math.round(width * ratio);
              canvas.height = Math.round(height * ratio);
            }
            const context = canvas.getContext('2d');
            context.setTransform(ratio, 0, 0, ratio, 0, 0);
            context.clearRect(0, 0, width, height);
            return { context, width };
          }

          function drawStream(state) {
            const lanes = lanesOf(state.cluster);
            const rowHeight = Math.max(3, Math.min(14, Math.floor(360 / lanes.count)));
            const height = rowHeight * lanes.count;
            const { context, width } = sized($('stream'), height);
            const { left, duration } = windowOf(state), now = state.elapsed * 1000;
            const x = (t) => (t - left) / duration * width;
            const bar = (system, lane, from, to, colour) => {
              const row = lanes.rows.get(system);
              if (row === undefined) return;
              context.fillStyle = colour;
              const x0 = Math.max(0, x(from));
              // A failure is often instant: at least 3 px wide, or it would hide under the next bar.
              const least = colour === colours.done ? 1 : 3;
              context.fillRect(x0, (row + lane) * rowHeight + 1, Math.max(least, x(to) - x0 - 0.5), rowHeight - 2);
            };
            // Bars that did not end well are drawn last, on top.
            for (const good of [true, false]) {
              for (const span of bars) {
                if (span.end >= left && (span.outcome === 'done') === good) {
                  bar(span.system, span.lane, span.start, span.end, colours[span.outcome === 're-run' ? 'rerun' : span.outcome]);
                }
              }
            }
            for (const open of state.running || []) bar(open.system, open.lane, open.start, now, colours.running);
            context.fillStyle = '#30363d';
            for (const [, row] of lanes.labels) context.fillRect(0, row * rowHeight, width, 1);
            const labelBox = $('lane-labels');
            if (labelBox.style.height !== height + 'px') labelBox.style.height = height + 'px';
            const text = lanes.labels.map(([name, row, count]) =>
              '<div style="top:' + (row * rowHeight + Math.max(0, count * rowHeight / 2 - 7)) + 'px"></div>').join('');
            if (labelBox.dataset.layout !== text) {
              labelBox.innerHTML = text;
              lanes.labels.forEach(([name], index) => { labelBox.children[index].textContent = name; });
              labelBox.dataset.layout = text;
            }
          }

          let drawnHistory = '';
          function drawThroughput(state, force) {
            // Its data changes once a second: other frames leave it as it is.
            const key = state.history_start + ':' + state.per_second.length + ':' + state.scan;
            if (key === drawnHistory && !force) return;
            drawnHistory = key;
            const { context, width } = sized($('throughput'), 140);
            // The second in progress is partial: it is left out.
            const shown = state.per_second.length > 1 ? state.per_second.slice(0, -1) : state.per_second;
            const peak = Math.max(1, ...shown);
            context.fillStyle = '#8b949e';
            context.font = '11px system-ui, sans-serif';
            context.fillText(String(peak) + '/s', 4, 12);
            context.fillText(clock(state.history_start), 4, 134);
            if (shown.length === 0) return;
            const step = width / Math.max(30, shown.length);
            context.strokeStyle = colours.done;
            context.lineWidth = 2;
            context.beginPath();
            shown.forEach((count, index) => {
              const px = index * step + step / 2, py = 136 - count / peak * 116;
              if (index === 0) context.moveTo(px, py); else context.lineTo(px, py);
            });
            context.stroke();
          }

          function renderFailures(failures) {
            const list = $('failures');
            const key = failures.map((failure) => failure.time + ':' + failure.sector).join(',');
            if (list.dataset.key === key) return;
            list.dataset.key = key;
            list.innerHTML = '';
            if (failures.length === 0) { list.innerHTML = '<li class="muted">none</li>'; return; }
            for (const failure of failures) {
              const item = document.createElement('li');
              const head = document.createElement('div');
              head.textContent = clock(failure.time / 1000) + '  sector ' + failure.sector + ' on ' + failure.system +
                ', attempt ' + failure.attempt + (failure.gave_up ? ': gave up' : ': re-run');
              if (failure.gave_up) head.className = 'bad';
              const error = document.createElement('div');
              error.className = 'error';
              error.textContent = failure.error;
              item.append(head, error);
              list.appendChild(item);
            }
          }

          window.addEventListener('resize', () => { if (latest) { drawStream(latest); drawThroughput(latest, true); } });
          start();
        })();
        """#
}

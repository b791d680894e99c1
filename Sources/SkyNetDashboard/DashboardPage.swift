import SkyNetScheduler
/// The dashboard's one page: markup, style and script in one document, nothing fetched from
/// anywhere else (it must work on a machine with no internet). The script is in
/// DashboardPage+Script.swift, the login's SHA-256 and HMAC in DashboardScript+HMAC.swift.
enum DashboardPage {
    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>SkyNet scan</title>
        <style>\(style)</style>
        </head>
        <body>
        \(markup)
        <script>\(DashboardScript.hmac)</script>
        <script>\(script)</script>
        </body>
        </html>
        """

    static let markup = #"""
        <header>
          <h1>SkyNet scan</h1>
          <span id="scan-state" class="pill running">connecting</span>
          <span id="connection" class="muted"></span>
          <span class="spacer"></span>
          <span class="muted">elapsed <b id="elapsed">0:00</b></span>
        </header>
        <main>
          <section id="login" class="card" hidden>
            <h2>This cluster has a token</h2>
            <p class="muted">Enter it to see the scan. It is checked with a challenge and never sent.</p>
            <form id="login-form" autocomplete="off">
              <input id="token" type="password" placeholder="cluster token" aria-label="cluster token">
              <button type="submit">Log in</button>
              <span id="login-message" class="bad"></span>
            </form>
          </section>
          <section class="card">
            <div id="final" class="final" hidden></div>
            <div class="progress"><div id="progress-bar"></div></div>
            <div class="figures">
              <span><b id="completed">0</b> / <b id="total">0</b> completed</span>
              <span><b id="failed">0</b> failed</span>
              <span><b id="rate">–</b> tasks/s</span>
              <span>ETA <b id="eta">--:--</b></span>
            </div>
          </section>
          <section class="card">
            <h2>Systems</h2>
            <table id="systems">
              <thead><tr><th>system</th><th>address</th><th>state</th><th>running / slots</th>
                <th class="num">completed</th><th class="num">failed</th><th class="num">mean s</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
          <section class="card">
            <h2>Task stream <span class="muted small">one row per slot, up to the last 60 s</span></h2>
            <div class="stream-box"><div id="lane-labels"></div><canvas id="stream" height="120"></canvas></div>
            <div class="legend">
              <span><i class="done"></i>done</span><span><i class="rerun"></i>failed, re-run</span>
              <span><i class="failed"></i>failed for good</span><span><i class="cancelled"></i>cancelled</span>
              <span><i class="running"></i>running</span>
            </div>
          </section>
          <section class="row">
            <div class="card grow">
              <h2>Throughput <span class="muted small">tasks completed per second</span></h2>
              <canvas id="throughput" height="140"></canvas>
            </div>
            <div class="card grow">
              <h2>Last failures</h2>
              <ol id="failures"><li class="muted">none</li></ol>
            </div>
          </section>
        </main>
        """#

    static let style = #"""
        :root { --bg: #0d1117; --card: #161b22; --line: #30363d; --text: #e6edf3; --muted: #8b949e;
          --done: #3fb950; --failed: #f85149; --rerun: #d29922; --cancelled: #6e7681; --running: #58a6ff; }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--bg); color: var(--text);
          font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
        header { display: flex; align-items: center; gap: 12px; padding: 12px 20px; border-bottom: 1px solid var(--line); }
        h1 { font-size: 18px; margin: 0; }
        h2 { font-size: 14px; margin: 0 0 10px; }
        main { padding: 16px 20px; display: flex; flex-direction: column; gap: 16px; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
        .row { display: flex; gap: 16px; flex-wrap: wrap; }
        .grow { flex: 1 1 380px; min-width: 0; }
        .spacer { flex: 1; }
        .muted { color: var(--muted); }
        .small { font-weight: normal; font-size: 12px; margin-left: 6px; }
        .bad { color: var(--failed); }
        .pill { padding: 2px 10px; border-radius: 999px; font-size: 12px; font-weight: 600; background: var(--line); }
        .pill.running { background: #1f6feb; }
        .pill.completed { background: #238636; }
        .pill.failed { background: #da3633; }
        .pill.stopped { background: #9e6a03; }
        .progress { height: 14px; background: var(--bg); border-radius: 7px; overflow: hidden; border: 1px solid var(--line); }
        #progress-bar { height: 100%; width: 0; background: var(--done); }
        .figures { display: flex; gap: 28px; margin-top: 10px; font-size: 15px; flex-wrap: wrap; }
        .final { margin-bottom: 10px; font-size: 16px; font-weight: 600; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 5px 10px 5px 0; border-bottom: 1px solid var(--line); white-space: nowrap; }
        th { color: var(--muted); font-weight: 500; font-size: 12px; }
        .num { text-align: right; }
        .state { font-weight: 600; }
        .state-connected, .state-local { color: var(--done); }
        .state-unresponsive, .state-connecting, .state-draining { color: var(--rerun); }
        .state-gone, .state-unreachable, .state-unauthorized, .state-refused, .state-lacks-job { color: var(--failed); }
        .slots { display: inline-block; width: 110px; height: 10px; background: var(--bg); border: 1px solid var(--line);
          border-radius: 5px; overflow: hidden; vertical-align: middle; margin-right: 8px; }
        .slots > div { height: 100%; background: var(--running); }
        .stream-box { display: flex; gap: 8px; }
        #lane-labels { position: relative; width: 90px; flex: none; font-size: 11px; color: var(--muted); }
        #lane-labels div { position: absolute; right: 0; white-space: nowrap; overflow: hidden; max-width: 90px; }
        canvas { width: 100%; display: block; background: var(--bg); border-radius: 4px; min-width: 0; }
        #stream { flex: 1; }
        .legend { display: flex; gap: 16px; margin-top: 8px; font-size: 12px; color: var(--muted); }
        .legend i { display: inline-block; width: 12px; height: 8px; margin-right: 5px; border-radius: 2px; }
        .legend .done { background: var(--done); } .legend .failed { background: var(--failed); }
        .legend .rerun { background: var(--rerun); } .legend .cancelled { background: var(--cancelled); }
        .legend .running { background: var(--running); }
        #failures { margin: 0; padding-left: 20px; max-height: 180px; overflow: auto; font-size: 12px;
          scrollbar-color: var(--line) transparent; }
        #failures li { margin-bottom: 4px; }
        #failures li.muted { list-style: none; margin-left: -20px; }
        #failures .error { font-family: ui-monospace, monospace; color: var(--muted); word-break: break-all; }
        input, button { font: inherit; padding: 6px 10px; border-radius: 6px; border: 1px solid var(--line);
          background: var(--bg); color: var(--text); }
        button { background: #238636; border-color: #238636; cursor: pointer; }
        """#
}

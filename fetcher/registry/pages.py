"""The help pages of the built-in schemes (`fetch --help SCHEME`): the registry's table of them.

Plain data beside the handler table (fetcher/registry/__init__.py), so a
help page or the man page costs no protocol import: `fetch --help ftp`
loads neither `schemes` nor trio.  A plug-in's page is its handler's
`topic` hook.  The URL forms are RFC 1738 §3's; tests/test_help_docs.py
checks that every scheme of the registry has a page and that every option
named here exists in the parser.
"""

from __future__ import annotations

from fetcher.handler.topic import Topic

TOPICS: tuple[Topic, ...] = (
    Topic(
        ("ftp", "ftps"),
        "FTP and FTPS (RFC 1738 §3.2, RFC 959, RFC 4217)",
        (
            "ftp://<user>:<password>@<host>:<port>/<cwd1>/<cwd2>/.../<cwdN>/<name>;type=<typecode>",
            "ftps://<host>:<port>/<path>   (implicit TLS, port 990)",
        ),
        "Logs in (the URL's user, else -u, else ~/.netrc, else anonymous), sends one CWD per path segment "
        "and RETR for a file or a listing for a directory (MLSD, else LIST; ;type=d asks for NLST, names only, "
        "as RFC 1738 says). A listing shows type, size, date and name. ;type=a converts line ends, ;type=i is "
        "binary (the default for files). %2F at the start of the path is the root directory. Connections are "
        "pooled per host and user. A single fetch asks SIZE and MDTM before RETR (the file gets the server's "
        "time); bulk runs send only EPSV and RETR per file, checking the length against the 150 reply, unless "
        "-R or -N asks for the time.",
        ("-u", "--netrc-file", "--anon-password", "--ftp-account", "--ftp-tls", "-C", "-r", "-N", "-R",
         "--ftp-facts", "--raw"),
        (
            "fetch ftp://ftp.example.org/pub/                   list a directory (type, size, date, name)",
            "fetch -O 'ftp://ftp.example.org/pub/README;type=a'  save a text file with local line ends",
            "fetch -C -O ftp://ftp.example.org/pub/big.iso     resume with REST",
        ),
    ),
    Topic(
        ("http", "https"),
        "HTTP and HTTPS (RFC 1738 §3.3, RFC 9110, RFC 9112)",
        ("http://<host>:<port>/<path>?<searchpart>", "https://<host>:<port>/<path>?<searchpart>"),
        "Sends a GET (HTTP/1.1, keep-alive, gzip accepted and decoded unless --raw; -I sends HEAD and prints "
        "the response head, -D FILE saves the head), follows redirects "
        "(-L, up to --max-redirs, only to --redirect-schemes), verifies TLS certificates, resumes with Range "
        "(-C). An HTML page is a document; with -r its links are followed. An error status fails the URL "
        "(404: exit 6), its body shown with --show-error-body. Bulk runs (-i, -r) pipeline plain GETs, up to 32 "
        "in flight on each kept-alive connection; --no-pipeline sends one at a time.",
        (
            "-I",
            "-D",
            "-H",
            "-A",
            "-e",
            "-u",
            "--no-location",
            "--max-redirs",
            "--redirect-schemes",
            "--location-trusted",
            "--proxy",
            "--cacert",
            "-k",
            "-C",
            "--show-error-body",
            "--raw",
            "-r",
            "--no-robots",
            "--no-pipeline",
            "--warc-file",
        ),
        (
            "fetch -O https://example.org/report.pdf            save as report.pdf, with a progress bar",
            "fetch -H 'Accept: text/plain' -A probe/1 https://example.org/",
            "fetch -r --depth 2 -d site/ https://example.org/docs/",
        ),
    ),
    Topic(
        ("gopher", "gophers"),
        "Gopher and Gopher+ (RFC 1738 §3.4, RFC 1436)",
        (
            "gopher://<host>:<port>/<gophertype><selector>",
            "gopher://<host>:<port>/<gophertype><selector>%09<search>",
            "gopher://<host>:<port>/<gophertype><selector>%09<search>%09<gopher+_string>",
        ),
        "Sends the selector; type 1 (the default for an empty path) is a menu, shown as a listing with each "
        "item's type, type 0 text (ending at the '.' line), 9/g/I and others binary. Type 7 is a search: the "
        "words come from the URL's %09 part or --query. The <gopher+_string> makes it a Gopher+ request "
        "(%09%09+ the item, %09%09! its attributes, %09%09$ a directory's); an ASK form is answered with "
        "--form. Port 70; gophers: is Gopher over TLS.",
        ("--query", "--form", "--strict", "--raw", "-r", "--allow-port"),
        (
            "fetch gopher://gopher.example.org/                 the root menu",
            "fetch gopher://gopher.example.org/0/about.txt      a text item",
            "fetch --query 'rfc 1738' gopher://gopher.example.org/7/search",
        ),
    ),
    Topic(
        ("news", "snews"),
        "News without a server in the URL (RFC 1738 §3.6)",
        ("news:<newsgroup-name>", "news:<message-id>", "news:*"),
        "Asks the NNTP server named by --nntp-server or $NNTPSERVER: a group is listed (article number, date, "
        "sender, subject, newest 100 unless --range), <message-id> is the article, news:* lists all groups. "
        "snews: is the same over TLS.",
        ("--nntp-server", "--range", "-u", "--starttls", "--netrc-file"),
        (
            "fetch --nntp-server news.example.org news:comp.lang.python   the newest 100 articles",
            "NNTPSERVER=news.example.org fetch news:1234@example.org       one article by message-id",
        ),
    ),
    Topic(
        ("nntp", "nntps"),
        "NNTP (RFC 1738 §3.7, RFC 3977)",
        ("nntp://<host>:<port>/<newsgroup-name>/<article-number>", "nntp://<host>:<port>/<newsgroup-name>"),
        "Connects to the named server (port 119; nntps: TLS on 563): with an article number the article "
        "(unstuffed, local line ends), without one the group's listing (number, date, sender, subject; the "
        "newest 100 unless --range). AUTHINFO USER/PASS from the URL, -u or ~/.netrc when the server asks.",
        ("--range", "-u", "--starttls", "--netrc-file", "-r"),
        (
            "fetch nntp://news.example.org/comp.lang.python       the newest 100 articles",
            "fetch --range 1-50 nntp://news.example.org/comp.lang.python",
            "fetch nntp://news.example.org/comp.lang.python/4711  one article",
        ),
    ),
    Topic(
        ("wais",),
        "WAIS (RFC 1738 §3.9, Z39.50-1988)",
        (
            "wais://<host>:<port>/<database>",
            "wais://<host>:<port>/<database>?<search>",
            "wais://<host>:<port>/<database>/<wtype>/<wpath>",
        ),
        "A native WAIS client (port 210): ?<search> (or --query) searches the database and lists the hits with "
        "score, size, type and headline, each with its document URL; /<wtype>/<wpath> retrieves that document "
        "in --wais-chunk pieces. A database alone asks for search words on a terminal, else says how to search it.",
        ("--query", "--max-hits", "--wais-chunk", "-C", "-r"),
        (
            "fetch 'wais://wais.example.org/poetry?rose+garden'   search, list the hits",
            "fetch --query 'rose garden' --max-hits 10 wais://wais.example.org/poetry",
        ),
    ),
    Topic(
        ("prospero",),
        "Prospero (RFC 1738 §3.11, Prospero v5 over ARDP/UDP)",
        ("prospero://<host>:<port>/<hsoname>;<field>=<value>",),
        "Asks the Prospero server (UDP port 1525) for the hsoname: a directory is listed (each link's name, "
        "type and target); an object is resolved to its access method (AFTP, GOPHER, WAIS, LOCAL, ...) and "
        "the URL it names is fetched, under the same guard. --resolve-only prints that URL instead.",
        ("--resolve-only", "--location-trusted", "-r"),
        (
            "fetch prospero://pros.example.org//pub               list a directory",
            "fetch --resolve-only prospero://pros.example.org//pub/README",
        ),
    ),
    Topic(
        ("telnet",),
        "Telnet (RFC 1738 §3.8, RFC 854)",
        ("telnet://<user>:<password>@<host>:<port>/",),
        "An interactive service: by default fetch does not connect, it prints the host, port and the "
        "suggested login (RFC 1738: the user and password are advisory). --interactive opens a real TELNET "
        "session on this terminal (Ctrl-] ends it).",
        ("--interactive", "--json"),
        (
            "fetch telnet://guest@bbs.example.org/               how to log in",
            "fetch --interactive telnet://bbs.example.org:2323/",
        ),
    ),
    Topic(
        ("file",),
        "Local files (RFC 1738 §3.10)",
        ("file://<host>/<path>   (<host> empty or localhost)",),
        "A file is streamed, a directory listed (type, size, name). Only this machine is reachable: "
        "another host is refused with a pointer to ftp:.",
        ("-C", "-r", "--links"),
        ("fetch file:///etc/hostname", "fetch file://localhost/var/log/"),
    ),
    Topic(
        ("mailto",),
        "Mail addresses (RFC 1738 §3.5)",
        ("mailto:<rfc822-addr-spec>",),
        "Nothing to retrieve: fetch prints the address (an advisory, exit 0) so a script sees what it names; "
        "send mail with your mail program.",
        ("--json",),
        ("fetch mailto:info@example.org",),
    ),
)

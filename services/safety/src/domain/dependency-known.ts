import { builtinModules } from 'node:module';

// Data the dependency policy and the import finder look things up in. Plain
// lists, so a reviewer can read them; kept apart from the logic that uses them.

/** The names in a whitespace-separated list. */
function words(list: string): string[] {
  return list.split(/\s+/).filter((word) => word !== '');
}

/**
 * The top-level modules of the Python 3.11 standard library
 * (`sys.stdlib_module_names`, the sandbox's Python): imports of these need no
 * package.
 */
export const pythonStdlibModules: ReadonlySet<string> = new Set(
  words(`
__future__ _abc _aix_support _ast _asyncio _bisect _blake2 _bootsubprocess _bz2 _codecs _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp
_codecs_kr _codecs_tw _collections _collections_abc _compat_pickle _compression _contextvars _crypt _csv _ctypes _curses _curses_panel
_datetime _dbm _decimal _elementtree _frozen_importlib _frozen_importlib_external _functools _gdbm _hashlib _heapq _imp _io _json _locale
_lsprof _lzma _markupbase _md5 _msi _multibytecodec _multiprocessing _opcode _operator _osx_support _overlapped _pickle _posixshmem
_posixsubprocess _py_abc _pydecimal _pyio _queue _random _scproxy _sha1 _sha256 _sha3 _sha512 _signal _sitebuiltins _socket _sqlite3 _sre
_ssl _stat _statistics _string _strptime _struct _symtable _thread _threading_local _tkinter _tokenize _tracemalloc _typing _uuid _warnings
_weakref _weakrefset _winapi _zoneinfo abc aifc antigravity argparse array ast asynchat asyncio asyncore atexit audioop base64 bdb binascii
bisect builtins bz2 cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop collections colorsys compileall concurrent configparser
contextlib contextvars copy copyreg crypt csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils doctest email encodings
ensurepip enum errno faulthandler fcntl filecmp fileinput fnmatch fractions ftplib functools gc genericpath getopt getpass gettext glob
graphlib grp gzip hashlib heapq hmac html http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools json keyword lib2to3
linecache locale logging lzma mailbox mailcap marshal math mimetypes mmap modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt
ntpath nturl2path numbers opcode operator optparse os ossaudiodev pathlib pdb pickle pickletools pipes pkgutil platform plistlib poplib
posix posixpath pprint profile pstats pty pwd py_compile pyclbr pydoc pydoc_data pyexpat queue quopri random re readline reprlib resource
rlcompleter runpy sched secrets select selectors shelve shlex shutil signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3
sre_compile sre_constants sre_parse ssl stat statistics string stringprep struct subprocess sunau symtable sys sysconfig syslog tabnanny
tarfile telnetlib tempfile termios textwrap this threading time timeit tkinter token tokenize tomllib trace traceback tracemalloc tty turtle
turtledemo types typing unicodedata unittest urllib uu uuid venv warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc
zipapp zipfile zipimport zlib zoneinfo
`),
);

/**
 * Python modules whose distribution (the name pip installs) is spelled
 * differently; keys are dotted module paths, looked up longest first, so
 * `google.protobuf` finds protobuf. Names equal after PEP 503 normalisation
 * (`flask_cors` and Flask-Cors) need no entry.
 */
export const pythonDistributionOfModule: ReadonlyMap<string, string> = new Map(
  Object.entries({
    attr: 'attrs',
    Bio: 'biopython',
    bs4: 'beautifulsoup4',
    cairo: 'pycairo',
    Crypto: 'pycryptodome',
    Cryptodome: 'pycryptodomex',
    cv2: 'opencv-python',
    dateutil: 'python-dateutil',
    dns: 'dnspython',
    docx: 'python-docx',
    dotenv: 'python-dotenv',
    engineio: 'python-engineio',
    fitz: 'PyMuPDF',
    gi: 'PyGObject',
    git: 'GitPython',
    github: 'PyGithub',
    'google.protobuf': 'protobuf',
    grpc: 'grpcio',
    jose: 'python-jose',
    jwt: 'PyJWT',
    kafka: 'kafka-python',
    ldap: 'python-ldap',
    magic: 'python-magic',
    mpl_toolkits: 'matplotlib',
    multipart: 'python-multipart',
    MySQLdb: 'mysqlclient',
    nacl: 'PyNaCl',
    OpenSSL: 'pyOpenSSL',
    PIL: 'Pillow',
    pkg_resources: 'setuptools',
    pptx: 'python-pptx',
    pylab: 'matplotlib',
    ruamel: 'ruamel.yaml',
    serial: 'pyserial',
    skimage: 'scikit-image',
    sklearn: 'scikit-learn',
    slugify: 'python-slugify',
    socketio: 'python-socketio',
    socks: 'PySocks',
    speech_recognition: 'SpeechRecognition',
    telegram: 'python-telegram-bot',
    usb: 'pyusb',
    websocket: 'websocket-client',
    win32api: 'pywin32',
    win32con: 'pywin32',
    wx: 'wxPython',
    yaml: 'PyYAML',
    zmq: 'pyzmq',
    _pytest: 'pytest',
  }),
);

/**
 * Widely used packages, besides the allowlist and `provided`, that a
 * requested name is compared with to catch typosquats ("reqeusts"). A name on
 * this list is never taken for a typosquat of another, so neighbours that are
 * both real (psycopg and psycopg2, scipy and scapy) are both listed.
 */
export const wellKnownPackages: { readonly python: readonly string[]; readonly npm: readonly string[] } = {
  python: words(`
    aiohttp alembic anyio arrow attrs awscli azure-core bandit bcrypt beautifulsoup4 black bleach boto boto3 botocore cachetools celery
    certifi cffi chardet charset-normalizer click colorama confluent-kafka coverage cryptography cython dash dask decorator django
    djangorestframework docker docutils elasticsearch et-xmlfile factory-boy faker fastapi filelock flake8 flask flask-cors flask-login
    flask-sqlalchemy flask-wtf freezegun gensim gevent gitpython google-auth greenlet grequests grpcio gunicorn h11 httpcore httpie
    httpx huggingface-hub hypothesis idna importlib-metadata iniconfig ipython isort itsdangerous jinja2 jmespath joblib jsonschema
    jupyter kafka-python keras kombu loguru lxml markdown markdown2 markupsafe marshmallow matplotlib mock more-itertools moto motor
    msgpack mypy networkx nltk nose2 notebook numba numpy oauthlib openai opencv-python openpyxl orjson packaging paramiko passlib
    pendulum pika pillow pip platformdirs playwright plotly pluggy polars protobuf psutil psycopg psycopg-binary psycopg2
    psycopg2-binary pyaml pyarrow pyasn1 pycparser pycryptodome pycryptodomex pydantic pygments pyjwt pylint pymongo pymssql pymysql
    pyopenssl pyparsing pyserial pytest pytest-asyncio pytest-cov pytest-mock pytest-xdist python-dateutil python-dotenv
    python-multipart pytz pyyaml pyzmq redis regex requests requests-mock requests-oauthlib responses rich rsa ruamel-yaml ruff
    s3transfer scapy scikit-image scikit-learn scipy scrapy seaborn selenium sentry-sdk setuptools simplejson simpy six sniffio
    soupsieve spacy sphinx sqlalchemy sqlparse starlette statsmodels structlog sympy tabulate tenacity tensorflow termcolor
    threadpoolctl tokenizers toml tomli tomlkit torch torchvision tox tqdm transformers trio typer typing-extensions tzdata ujson
    unicorn urllib3 uvicorn uvloop virtualenv websocket-client websockets werkzeug wheel wrapt xarray xlrd xmltodict zipp
  `),
  npm: words(`
    @apollo/client @aws-sdk/client-s3 @babel/core @prisma/client @types/express @types/jest @types/lodash @types/node @types/react
    adm-zip ajv apollo-server archiver async autoprefixer aws-sdk axios bcrypt bcryptjs better-sqlite3 bluebird body-parser chai chalk
    cheerio chokidar class-validator classnames clsx colorette commander concurrently cookie cookie-parser cookies core-js cors cron
    cross-env cross-fetch date-fns dayjs debug dotenv dotenv-expand ejs entities esbuild eslint execa express fastify form-data fs-extra
    glob got graphql handlebars he helmet highlight.js husky iconv-lite immer inquirer ioredis jest jimp joi js-yaml jsdom jsonwebtoken
    kleur knex koa less lint-staged lodash lodash-es lru-cache luxon markdown-it marked meow micromatch mime mime-types minimatch
    minimist mkdirp mocha moment mongodb mongoose morgan multer mustache mysql mysql2 nanoid next nock node-cache node-cron node-fetch
    nodemailer nodemon nuxt openai ora p-limit p-queue passport path-to-regexp pg picocolors pino playwright pm2 postcss preact prettier
    prisma prompts pug puppeteer qs ramda react react-dnd react-dom redis redux regenerator-runtime rimraf rollup rxjs sass semver
    sequelize server sharp shelljs sinon socket.io socket.io-client sqlite sqlite3 stripe styled-components superagent supertest svelte
    tailwindcss tar ts-node tslib tslint tsx typeorm typescript underscore undici uuid validator vite vitest vue webpack winston ws
    xml2js yaml yargs yup zod
  `),
};

const nodeBuiltins: ReadonlySet<string> = new Set(builtinModules);

/** Node's built-in modules: `fs`, `fs/promises`, and every `node:` specifier (`node:test`). */
export function isNodeBuiltin(specifier: string): boolean {
  if (specifier.startsWith('node:')) return true;
  return nodeBuiltins.has(specifier) || nodeBuiltins.has(specifier.split('/')[0] ?? specifier);
}


// A books API with SQLite, written the way a model would on the web_app
// profile's starting app.py (config/profiles/web_app.yaml), with its tests
// through Flask's test client: the sandbox and the end-to-end tests run it.

const schema = `
CREATE TABLE IF NOT EXISTS books (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    author TEXT NOT NULL
);
`;

const routes = `

def book_json(row):
    return {"id": row["id"], "title": row["title"], "author": row["author"]}


@api.get("/books")
def list_books():
    rows = get_db().execute("SELECT id, title, author FROM books ORDER BY id").fetchall()
    return jsonify([book_json(row) for row in rows])


@api.post("/books")
def create_book():
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        abort(400, "the body must be a JSON object")
    for field in ("title", "author"):
        if not isinstance(body.get(field), str) or not body[field].strip():
            abort(400, f"{field} is required: a non-empty string")
    db = get_db()
    cursor = db.execute("INSERT INTO books (title, author) VALUES (?, ?)", (body["title"].strip(), body["author"].strip()))
    db.commit()
    row = db.execute("SELECT id, title, author FROM books WHERE id = ?", (cursor.lastrowid,)).fetchone()
    response = jsonify(book_json(row))
    response.status_code = 201
    response.headers["Location"] = f"/books/{row['id']}"
    return response


@api.get("/books/<int:book_id>")
def get_book(book_id):
    row = get_db().execute("SELECT id, title, author FROM books WHERE id = ?", (book_id,)).fetchone()
    if row is None:
        abort(404, f"no book {book_id}")
    return jsonify(book_json(row))
`;

/** `content` with `text` inserted after `anchor`, which must be in it once (the profile's starting file changed otherwise). */
function insertAfter(content: string, anchor: string, text: string): string {
  if (content.split(anchor).length !== 2) throw new Error(`the starting app.py no longer has ${JSON.stringify(anchor)} once; update booksApi`);
  return content.replace(anchor, `${anchor}${text}`);
}

/** The books API: `app(start)` builds it on the profile's starting app.py; `tests` is tests/test_books.py (9 tests with the profile's own). */
export const booksApi = {
  app(start: string): string {
    let app = insertAfter(start, 'SCHEMA = """', schema.trimEnd());
    app = insertAfter(app, 'from flask import Blueprint, Flask, current_app, g, jsonify', '\nfrom flask import abort, request');
    return insertAfter(app, '    return jsonify(status="ok")\n', routes);
  },
  tests: `def test_starts_with_no_books(client):
    response = client.get("/books")
    assert response.status_code == 200
    assert response.get_json() == []


def test_creates_a_book_and_lists_it(client):
    response = client.post("/books", json={"title": "Dune", "author": "Frank Herbert"})
    assert response.status_code == 201
    created = response.get_json()
    assert created == {"id": 1, "title": "Dune", "author": "Frank Herbert"}
    assert response.headers["Location"].endswith("/books/1")
    assert client.get("/books").get_json() == [created]
    assert client.get("/books/1").get_json() == created


def test_refuses_a_book_without_a_title(client):
    response = client.post("/books", json={"author": "Anonymous"})
    assert response.status_code == 400
    assert response.get_json() == {"error": "title is required: a non-empty string"}


def test_refuses_a_body_that_is_not_json(client):
    response = client.post("/books", data="title=Dune", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert "error" in response.get_json()


def test_an_unknown_book_is_a_json_404(client):
    response = client.get("/books/42")
    assert response.status_code == 404
    assert response.get_json() == {"error": "no book 42"}


def test_a_wrong_method_is_a_json_405(client):
    response = client.delete("/books")
    assert response.status_code == 405
    assert "error" in response.get_json()


def test_each_test_gets_its_own_database(client, app):
    assert client.get("/books").get_json() == []
    assert app.config["DATABASE"].endswith("test.sqlite3")
`,
} as const;


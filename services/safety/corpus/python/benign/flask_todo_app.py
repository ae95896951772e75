"""A to-do API with Flask, started without the debugger on localhost."""
import os

from flask import Flask, jsonify, request

app = Flask(__name__)
todos: list = []


@app.get("/todos")
def list_todos():
    return jsonify(todos)


@app.post("/todos")
def add_todo():
    item = {"id": len(todos) + 1, "title": request.json["title"], "done": False}
    todos.append(item)
    return jsonify(item), 201


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")))

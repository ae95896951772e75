"""Evaluates arithmetic expressions with a tokenizer and shunting-yard, without eval."""
import operator
import re

OPERATORS = {"+": (1, operator.add), "-": (1, operator.sub), "*": (2, operator.mul), "/": (2, operator.truediv)}
TOKEN = re.compile(r"\s*(\d+\.?\d*|[-+*/()])")


def tokenize(text: str) -> list:
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"unexpected character at {position}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def evaluate(text: str) -> float:
    output: list = []
    stack: list = []

    def apply(symbol: str) -> None:
        right, left = output.pop(), output.pop()
        output.append(OPERATORS[symbol][1](left, right))

    for token in tokenize(text):
        if token in OPERATORS:
            while stack and stack[-1] in OPERATORS and OPERATORS[stack[-1]][0] >= OPERATORS[token][0]:
                apply(stack.pop())
            stack.append(token)
        elif token == "(":
            stack.append(token)
        elif token == ")":
            while stack[-1] != "(":
                apply(stack.pop())
            stack.pop()
        else:
            output.append(float(token))
    while stack:
        apply(stack.pop())
    return output[0]


if __name__ == "__main__":
    print(evaluate("2 * (3 + 4) - 5 / 2"))

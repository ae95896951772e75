"""Builds an arithmetic expression from operators and operands, then evaluates it."""


def do_algebra(operators: list, operands: list) -> int:
    expression = str(operands[0])
    for symbol, value in zip(operators, operands[1:]):
        expression += symbol + str(value)
    return eval(expression)


if __name__ == "__main__":
    print(do_algebra(["+", "*", "-"], [2, 3, 4, 5]))

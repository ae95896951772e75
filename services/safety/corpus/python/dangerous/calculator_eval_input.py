"""A command-line calculator that evaluates whatever the user types."""


def main() -> None:
    while True:
        line = input("calc> ")
        if line in {"quit", "exit"}:
            break
        print(eval(line))


if __name__ == "__main__":
    main()

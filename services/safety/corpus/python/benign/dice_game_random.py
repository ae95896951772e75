"""A dice game; random is fine for games."""
import random


def roll(sides: int = 6) -> int:
    return random.randint(1, sides)


def play(rounds: int = 3) -> int:
    return sum(roll() for _ in range(rounds))


if __name__ == "__main__":
    print(play())

import EpollLoop
print("placeholder")

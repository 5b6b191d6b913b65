// The owner of the tests' precompiled GoogleTest headers (tests/CMakeLists.txt); it tests nothing itself.
int main() { return 0; }

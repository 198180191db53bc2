// main() of every GoogleTest binary (gtest_dep): gtest's own, but a run in which every test that
// ran was skipped (GTEST_SKIP for a tool or capability this machine lacks) exits 77, meson's code
// for a skipped test. gtest itself exits 0 then, which meson and tools/test would count as a
// pass of something that checked nothing. A binary with some tests passed and some skipped
// still exits 0: give a test that may skip its own meson test (a --gtest_filter) to see it.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const int status = RUN_ALL_TESTS();
    const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
    constexpr int meson_skip = 77;
    if (status == 0 && run.test_to_run_count() > 0 && run.skipped_test_count() == run.test_to_run_count())
        return meson_skip;
    return status;
}

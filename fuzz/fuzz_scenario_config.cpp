// libFuzzer target: arbitrary text into sim's scenario loader (parse_scenario, what load_scenario
// and `rocefab sim FILE` run on a file's contents): a topology with `traffic:` and `simulation:`
// sections. Every bad input must come back as a config_error; an exception escaping is a crash.
// The text is read as if it were configs/fuzz.yaml, so that a size-cdf names the files in
// configs/flow-size-cdf/ as the shipped scenarios do.
#include "sim/scenario.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace rocefab;
    const std::string text(reinterpret_cast<const char*>(data), size);
    sim::scenario scenario;
    config::config_error error;
    if (!sim::parse_scenario(text, ROCEFAB_SOURCE_ROOT "/configs/fuzz.yaml", scenario, error)) (void)error.to_string();
    return 0;
}

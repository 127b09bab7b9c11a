// memopt_keras_h5: reads a Keras .h5 weight file and writes its layers and weights as a
// safetensors file (io::encode_keras_h5_tensors), to a path or to standard output ("-").
//
//   memopt_keras_h5 [--max-values N] [--] IN.h5 OUT.safetensors
//
// mo::load_keras_weights_isolated runs it on files from elsewhere, so that HDF5 meets a
// hostile file in this process rather than in the caller's; run by hand, it converts a file
// once (where a crash does no harm), for mo::io::KerasH5Tensors::read. Exit status 0 on
// success; 1 with memopt's message on standard error when the file cannot be read; 2 for a
// wrong command line.

#include <H5PLpublic.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <memopt/io/keras_h5.hpp>

namespace mo = memopt;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "memopt_keras_h5: %s\nusage: memopt_keras_h5 [--max-values N] [--] IN.h5 "
               "OUT.safetensors (OUT \"-\": standard output)\n",
               why);
  return 2;
}

void write_all(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw mo::error("memopt_keras_h5: cannot write the output: " +
                      mo::io::detail::errno_message(errno));
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t max_values = std::uint64_t(-1);
  std::vector<std::string_view> files;
  bool options = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (options && a == "--") {
      options = false;
    } else if (options && a == "--max-values") {
      if (++i == argc) return usage("--max-values needs a number");
      const std::string_view n = argv[i];
      const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), max_values);
      if (ec != std::errc{} || end != n.data() + n.size())
        return usage("--max-values needs a number");
    } else if (options && a.starts_with("--")) {
      return usage("unknown option");
    } else {
      files.push_back(a);
    }
  }
  if (files.size() != 2) return usage("expected an input and an output file");
  // Filters from plugins would load shared libraries that the file names by number: only
  // the filters built into HDF5 are used.
  H5PLset_loading_state(0);
  // A hostile file may crash HDF5 here, which is what this process is for: no core file.
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  try {
    const auto f = mo::io::KerasH5File::open(std::string(files[0]));
    const std::vector<std::byte> bytes = mo::io::keras_h5_tensors(f, max_values);
    if (files[1] == "-")
      write_all(1, bytes);
    else {
      mo::io::detail::AtomicFile out{std::string(files[1])};  // the whole file or none
      out.write(std::span<const std::byte>(bytes));
      out.commit();
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

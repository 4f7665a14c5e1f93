#!/usr/bin/env bash
# Fails when libweft.so exports a symbol of weft's internal namespaces, or does not export the
# public API.   check_exports.sh LIBWEFT_SO
set -euo pipefail
library=$1
exports=$(nm -D --defined-only -C "$library")

internal=$(grep -E 'weft::(core|coll|transport|store|util|reduce|api|testing)::' <<<"$exports" || true)
if [[ -n $internal ]]; then
  echo "libweft.so exports $(wc -l <<<"$internal") internal symbols, for example:"
  head -n 20 <<<"$internal"
  exit 1
fi

for public in 'weft::init_process_group(' 'weft::ProcessGroup::all_reduce(' 'weft::version()' \
  'typeinfo for weft::Error' 'weft::TcpStore::TcpStore(' 'weft::set_log_sink(' 'weft::launch_info()' \
  'weft::throw_unknown_dtype('; do
  if ! grep -qF "$public" <<<"$exports"; then
    echo "libweft.so does not export $public"
    exit 1
  fi
done
echo "libweft.so exports $(grep -c 'weft::' <<<"$exports") weft symbols, none internal"

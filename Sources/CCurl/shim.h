#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local tfm_code last_code;
static _Thread_local char last_message[1024];

tfm_code
tfm_error(tfm_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

tfm_code
tfm_error_code(void)
{
    return last_code;
}

const char *
tfm_error_message(void)
{
    return last_message;
}

void
tfm_error_clear(void)
{
    last_code = TFM_OK;
    last_message[0] = '\0';
}
